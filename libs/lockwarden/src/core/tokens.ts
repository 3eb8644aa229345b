import { randomBytes } from 'node:crypto';

/** A fresh 128-bit owner token: one per acquisition, never per process or request. */
export function newOwnerToken(): string {
  return randomBytes(16).toString('hex');
}

/** A public 64-bit id a fair waiter's grant is announced by, so the secret token never goes on a channel. */
export function newWaiterId(): string {
  return randomBytes(8).toString('hex');
}
