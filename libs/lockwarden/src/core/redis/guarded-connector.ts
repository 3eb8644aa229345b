import type { RedisOptions } from 'ioredis';
import type StandaloneConnector from 'ioredis/built/connectors/StandaloneConnector';
import type { StandaloneConnectionOptions } from 'ioredis/built/connectors/StandaloneConnector';
import { ownRequire } from '../own-require';

type ConnectorClass = NonNullable<RedisOptions['Connector']>;

interface StandaloneModule {
  default: typeof StandaloneConnector;
}

let made: ConnectorClass | null | undefined;

/**
 * ioredis's connector for one server, with each socket it makes listening for errors for its
 * whole life. ioredis listens for a socket's first error only (`once`): a TLS socket can fail
 * twice (the certificate refused, then the server's alert), and the second error, with nobody
 * listening, is thrown as an uncaught exception that ends the application. Heard here, it
 * changes nothing else: the first still reaches ioredis, and the socket's close, which every
 * failure ends in, still makes it reconnect. Undefined where ioredis keeps its connector
 * elsewhere (a version not tried): its own is used then.
 */
export function guardedConnector(): ConnectorClass | undefined {
  if (made !== undefined) return made ?? undefined;
  try {
    const { default: Standalone } = ownRequire()('ioredis/built/connectors/StandaloneConnector') as StandaloneModule;
    class GuardedConnector extends Standalone {
      // ioredis hands a connector the client's options, which its ConnectorConstructor types unknown.
      constructor(options: unknown) {
        super(options as StandaloneConnectionOptions);
      }

      override async connect(
        ...args: Parameters<StandaloneConnector['connect']>
      ): ReturnType<StandaloneConnector['connect']> {
        const stream = await super.connect(...args);
        stream.on('error', ignore);
        return stream;
      }
    }
    made = GuardedConnector;
  } catch {
    made = null;
  }
  return made ?? undefined;
}

function ignore(): void {
  // What the socket says after its first error: ioredis heard that one, and acts on the close.
}
