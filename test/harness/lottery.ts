import { LotteryCluster } from '../../apps/lottery/demo/lottery-cluster';
import { redisForFile } from './redis';

/**
 * The demo lottery for one spec file: its instances (LotteryCluster, with `options`) on a
 * Redis of the file's own, started before its tests and stopped after them. Read `cluster`
 * inside tests, once it is up.
 */
export function lotteryForFile(options: Omit<Parameters<typeof LotteryCluster.start>[0], 'redisUrl'>): {
  readonly cluster: LotteryCluster;
} {
  // Its own server: the lottery's instances crash and stop, and their keys are the lottery's alone.
  const server = redisForFile({ own: true });
  let cluster: LotteryCluster | undefined;
  beforeAll(async () => {
    cluster = await LotteryCluster.start({ redisUrl: server.redis.url, ...options });
    server.atEnd(() => cluster?.stop());
  }, 60_000);
  return {
    get cluster() {
      if (!cluster) throw new Error('the lottery is not started yet: read it inside a test');
      return cluster;
    },
  };
}
