import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The least-privilege rule docs/configuration.md gives ("The Redis user"), read from the page
 * itself so a test proves what a reader copies: ACL SETUSER's arguments after the user name,
 * with `password` in place of the page's placeholder.
 */
export function documentedAclRule(password: string): string[] {
  const page = readFileSync(join(process.cwd(), 'docs', 'configuration.md'), 'utf8');
  const line = page.split('\n').find((l) => l.startsWith('ACL SETUSER lockwarden '));
  if (!line) throw new Error('docs/configuration.md gives no "ACL SETUSER lockwarden" rule');
  return line
    .split(/\s+/)
    .slice(3)
    .map((part) => (part.startsWith('>') ? `>${password}` : part));
}
