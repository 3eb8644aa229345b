import { LockLostError, LockUpgradeError } from '../../errors';
import { LeaseHandle } from '../lease/lease';
import type { Lease } from '../lease/lease';
import type { LockContext } from '../lease/lock-context';
import type { LeaseKind } from '../backend/lock-store';

/**
 * Reentrancy, by the calling flow's ancestry (its LockContext): a flow that already holds a
 * key takes another hold on the same lease instead of asking Redis again.
 */
export class Reentrancy {
  constructor(private readonly context: LockContext) {}

  /** Another hold on the lease of `key` this flow holds as `kind`, if it holds one. */
  again(key: string, kind: LeaseKind): LeaseHandle | undefined {
    const frame = this.context.find(key, kind);
    return frame ? holdAgain(frame.lease) : undefined;
  }

  /**
   * Reentrancy of read/write locks: read in read and write in write re-enter; read in write
   * is a downgrade (a real read hold, proved by the write token, that outlives the write);
   * write in read is refused. Returns the reentrant handle, or the write lease a read may
   * downgrade from.
   */
  rw(key: string, mode: 'read' | 'write'): LeaseHandle | Lease | undefined {
    const write = this.context.find(key, 'write');
    if (mode === 'write') {
      if (write) return holdAgain(write.lease);
      if (this.context.find(key, 'read')) throw new LockUpgradeError(key);
      return undefined;
    }
    const read = this.context.find(key, 'read');
    if (read) return holdAgain(read.lease);
    if (write && write.lease.state === 'lost') return holdAgain(write.lease);
    return write?.lease;
  }
}

/** Another hold on a lease this flow already has. */
function holdAgain(lease: Lease): LeaseHandle {
  if (lease.state === 'lost') throw new LockLostError(lease.key, 'the enclosing hold of this key was already lost');
  lease.holds++;
  return new LeaseHandle(lease);
}
