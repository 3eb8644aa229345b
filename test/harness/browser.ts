import { chromium } from 'playwright-core';
import type { Browser } from 'playwright-core';

/**
 * Debian's Chromium, headless, driven by playwright-core (no browser download). The flags
 * keep it from calling out: the only network here is loopback.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}
