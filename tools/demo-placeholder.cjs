#!/usr/bin/env node
// Until the lottery sample lands, `npm run demo` says what is coming and points at the tests.
'use strict';
console.log(
  [
    'Lockwarden demo: coming soon.',
    'The lottery sample (3 instances drawing 10 winners exactly once per draw) arrives with apps/lottery.',
    'Meanwhile `npm test` runs the lock engine against real, throwaway Redis servers.',
  ].join('\n'),
);
