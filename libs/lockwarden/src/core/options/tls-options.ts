import { LockConfigError } from '../../errors';
import { describe } from './validate';

// The checks of how Lockwarden's own ioredis clients connect over TLS: a URL with options beside
// it (`{ url, tls }`), and the `tls` of one server's or a Cluster's node options. Mistakes here
// would otherwise surface only as a handshake that fails at every reconnect, after the app started.

/** Settings a URL already makes: given beside it as well, one of the two would be ignored. */
const FROM_URL = ['host', 'port', 'path', 'sentinels'] as const;

const URL_PATTERN = /^rediss?:\/\//;

/**
 * `{ url, ...ioredis options }`: the URL a redis:// or rediss:// one, nothing beside it that the
 * URL decides, and a `tls` that means what it says (a rediss:// URL: TLS with a plain URL
 * would be TLS the URL does not show).
 */
export function checkUrlSpec(spec: Record<string, unknown>, what: string): void {
  const url = spec.url;
  if (typeof url !== 'string' || !URL_PATTERN.test(url)) {
    throw new LockConfigError(
      `${what}.url must be a redis:// or rediss:// URL, got ${typeof url === 'string' ? `"${url.slice(0, 60)}"` : describe(url)}.`,
    );
  }
  const clash = FROM_URL.find((name) => spec[name] !== undefined);
  if (clash) {
    throw new LockConfigError(
      `${what}.${clash} cannot be given beside ${what}.url, which says where Redis is: put it in the URL, or give no URL.`,
    );
  }
  checkTls(spec.tls, `${what}.tls`);
  if (spec.tls !== undefined && spec.tls !== false && url.startsWith('redis://')) {
    throw new LockConfigError(
      `${what}.tls is set but ${what}.url is a plain redis:// URL: write rediss:// for a TLS connection.`,
    );
  }
}

/**
 * ioredis's `tls`: true, a profile name, or Node's TLS options, whose `ca`, `cert` and `key`
 * hold PEM text (strings or Buffers, or lists of them). A file path there is the usual slip:
 * Node would take it for a certificate and fail every handshake.
 */
export function checkTls(tls: unknown, what: string): void {
  if (tls === undefined || typeof tls === 'boolean' || typeof tls === 'string') return;
  if (typeof tls !== 'object' || tls === null || Array.isArray(tls)) {
    throw new LockConfigError(`${what} must be Node's TLS options (e.g. { ca }), got ${describe(tls)}.`);
  }
  for (const name of ['ca', 'cert', 'key'] as const) {
    const value = (tls as Record<string, unknown>)[name];
    if (value === undefined) continue;
    const items = Array.isArray(value) ? value : [value];
    for (const item of items) {
      const text = typeof item === 'string' ? item : Buffer.isBuffer(item) ? item.toString('latin1') : undefined;
      if (text === undefined) {
        throw new LockConfigError(
          `${what}.${name} must be PEM text (a string or a Buffer, or a list of them), got ${describe(item)}.`,
        );
      }
      if (!text.includes('-----BEGIN')) {
        throw new LockConfigError(
          `${what}.${name} must hold the PEM text itself (readFileSync(path)), not a file path or other text: ` +
            `it has no "-----BEGIN" line.`,
        );
      }
    }
  }
}
