/**
 * Faults, on a private redis-server started here (never the shared one): lost scripts, a server
 * that stops answering, a server killed under load and restarted. Loops are bounded in time.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { redisBinariesMissing, startRedis, type PrivateRedis } from '../support/redis-servers.js';
import { ioredisClient, nodeRedisClient } from '../support/redis-clients.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import {
  calendarQuota,
  createLimiter,
  isSluiceError,
  tokenBucket,
  type Decision,
  type Limiter,
} from '../../src/index.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const skip = redisBinariesMissing();
const silent = { warn() {} };
const TIMEOUT_MS = 100;
const TIMEOUT = `${TIMEOUT_MS}ms` as const;

interface Connection {
  client: unknown;
  quit(): Promise<unknown>;
}
const clients: [string, (url: string) => Promise<Connection>][] = [
  [
    'ioredis',
    async (url) => {
      const client = await ioredisClient(url);
      return { client, quit: async () => client.disconnect() };
    },
  ],
  [
    'node-redis',
    async (url) => {
      const client = await nodeRedisClient(url);
      return { client, quit: async () => client.destroy() };
    },
  ],
];

/**
 * A coded store error: a failure, a timeout, or load (a call that ran out of time while Redis
 * still answered others, e.g. just before it was killed).
 */
function isStoreError(error: unknown): boolean {
  return (
    isSluiceError(error, 'SLUICE_STORE_UNAVAILABLE') ||
    isSluiceError(error, 'SLUICE_STORE_TIMEOUT') ||
    isSluiceError(error, 'SLUICE_STORE_OVERLOADED')
  );
}

for (const [clientName, connect] of clients) {
  describe(`RedisStore faults (${clientName})`, { skip }, () => {
    let server: PrivateRedis;
    let connection: Connection;
    let store: RedisStore;
    let counter = 0;
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);

    before(async () => {
      process.on('unhandledRejection', onUnhandled);
      server = await startRedis();
      connection = await connect(server.url);
      store = new RedisStore({ client: connection.client as never, timeout: TIMEOUT });
    });
    after(async () => {
      process.off('unhandledRejection', onUnhandled);
      await connection?.quit();
      await server?.stop();
    });
    const limiter = (burst = 1_000_000): Limiter =>
      createLimiter({
        name: `f${++counter}`,
        rule: tokenBucket({ limit: burst, period: '1h' }),
        store,
        logger: silent,
      });

    it('bad input: scripts lost (SCRIPT FLUSH) are reloaded by the NOSCRIPT fallback', async () => {
      // A store of its own with a timeout that a busy machine cannot run out: the reload costs a
      // second round trip, and what this test asks is that it happens, not how fast.
      const l = createLimiter({
        name: `f${++counter}`,
        rule: tokenBucket({ limit: 3, period: '1h' }),
        store: new RedisStore({ client: connection.client as never, timeout: '5s' }),
        logger: silent,
      });
      assert.equal((await l.take('k')).remaining, 2);
      await rawFlush(server.port);
      assert.equal((await l.take('k')).remaining, 1);
      assert.equal((await l.take('k')).remaining, 0);
    });

    it('a Redis that stops answering gives SLUICE_STORE_TIMEOUT, never a hang; it recovers', async () => {
      const l = limiter();
      await l.take('k');
      process.kill(server.pid!, 'SIGSTOP');
      try {
        const results = await Promise.allSettled(Array.from({ length: 50 }, () => l.take('k')));
        assert.ok(
          results.every((r) => r.status === 'rejected' && isSluiceError(r.reason, 'SLUICE_STORE_TIMEOUT')),
        );
        await assert.rejects(l.reset('k'), (e: unknown) => isSluiceError(e, 'SLUICE_STORE_TIMEOUT'));
      } finally {
        process.kill(server.pid!, 'SIGCONT');
      }
      assert.equal(await eventually(() => l.take('k')), true);
    });

    it('a refund answered with a timeout while Redis hangs is never applied when it wakes up; the reopened receipt refunds once', async () => {
      // A month's quota counts exactly: nothing refills while the test runs, and a refund on the
      // server's clock gives back the whole take (a token bucket keeps up to the clock offset's
      // error of it).
      const l = createLimiter({
        name: `refund${++counter}`,
        rule: calendarQuota({ limit: 100, per: 'month' }),
        store,
        logger: silent,
      });
      // A first refund loads the script: the one that times out is run by EVALSHA, not lost to
      // NOSCRIPT.
      await l.refund((await l.takeWithReceipt('k')).receipt!);
      const { receipt } = await l.takeWithReceipt('k', { cost: 5 });
      assert.ok(receipt !== undefined);
      process.kill(server.pid!, 'SIGSTOP');
      try {
        await assert.rejects(l.refund(receipt), (e: unknown) => isSluiceError(e, 'SLUICE_STORE_TIMEOUT'));
      } finally {
        process.kill(server.pid!, 'SIGCONT');
      }
      // The peek is sent after the refund's call on the same connection: Redis has run that call
      // (past its deadline, changing nothing) by the time it answers.
      assert.equal(await eventually(() => l.peek('k')), true);
      assert.equal((await l.peek('k')).remaining, 95, 'the refund that timed out was not applied');
      await l.refund(receipt);
      assert.equal((await l.peek('k')).remaining, 100);
      await assert.rejects(l.refund(receipt), (e: unknown) => isSluiceError(e, 'SLUICE_ARGUMENT'));
      assert.deepEqual(unhandled, []);
    });

    it('a hung Redis (SIGSTOP 20 s at a steady 3,000 takes/s) grows no memory in the client, and after SIGCONT no decision answered meanwhile is charged', async () => {
      // A quota with room for everything counts exactly (a bucket would refill meanwhile).
      const l = createLimiter({
        name: `hang${++counter}`,
        rule: calendarQuota({ limit: 1_000_000_000 }),
        store,
        logger: silent,
        failure: 'open',
      });
      // Counted as they settle: the test keeps no decision, so the heap shows the store's.
      let open = 0;
      let byStore = 0;
      let failedOpen = 0;
      const count = (d: Decision) => {
        open--;
        if (d.source === 'fail-open') failedOpen++;
        else if (d.allowed) byStore++;
      };
      const fire = () => {
        for (let i = 0; i < 30; i++) {
          open++;
          l.take('k').then(count, () => open--);
        }
      };
      const allSettled = async () => {
        for (let i = 0; i < 200 && open > 0; i++) await sleep(50);
        assert.equal(open, 0, 'every take settled');
      };
      let timer = setInterval(fire, 10);
      await sleep(300);
      process.kill(server.pid!, 'SIGSTOP');
      let growth: number;
      try {
        await sleep(300);
        gc();
        const before = process.memoryUsage().heapUsed;
        await sleep(20_000);
        clearInterval(timer);
        // What was issued has been answered (timeouts, failing open) before Redis resumes.
        await allSettled();
        gc();
        growth = process.memoryUsage().heapUsed - before;
        timer = setInterval(fire, 10);
      } finally {
        process.kill(server.pid!, 'SIGCONT');
      }
      await sleep(500);
      clearInterval(timer);
      await allSettled();
      // The client lets go of the calls Redis now answers (refused as past their deadline);
      // wait until the stored count stops changing, bounded in time.
      const key = `sluice:${l.name}:{k}`;
      const raw = (await import('../support/redis-servers.js')).rawCommand;
      const charged = async () =>
        Number((await raw(server.port, `GET ${key}`))?.split('\r\n')[1]?.split(':')[1]);
      let stored = await charged();
      for (let i = 0; i < 50; i++) {
        await sleep(100);
        const next = await charged();
        if (next === stored) break;
        stored = next;
      }
      assert.ok(growth < 10 * 1024 * 1024, `heap grew by ${growth} bytes while Redis hung`);
      assert.ok(failedOpen > 10_000, `only ${failedOpen} decisions failed open while Redis hung`);
      assert.equal(stored, byStore, 'charged exactly what was answered as admitted by Redis');
      assert.deepEqual(unhandled, []);
    });

    it('Redis killed under load: every call settles with a coded error, nothing is admitted while it is down, memory stays flat; restarted, decisions resume within 1 s', async () => {
      const l = limiter();
      let running = true;
      let down = false;
      let admittedWhileDown = 0;
      let errors = 0;
      let uncoded = 0;
      let slowest = 0;
      const worker = async () => {
        while (running) {
          const started = Date.now();
          try {
            const d = await l.take(`k${started % 100}`);
            if (down && d.allowed) admittedWhileDown++;
          } catch (error) {
            errors++;
            if (!isStoreError(error)) uncoded++;
          }
          slowest = Math.max(slowest, Date.now() - started);
          // Failures are immediate: yield so the loop does not starve the event loop.
          await new Promise((r) => setImmediate(r));
        }
      };
      const workers = Array.from({ length: 64 }, worker);
      await sleep(200);
      await server.kill();
      down = true;
      await sleep(100);
      // While Redis is down: many more failed calls, and the heap does not grow with them.
      gc();
      const before = process.memoryUsage().heapUsed;
      const errorsBefore = errors;
      await sleep(700);
      gc();
      const growth = process.memoryUsage().heapUsed - before;
      assert.ok(errors - errorsBefore > 1000, `only ${errors - errorsBefore} calls failed while down`);
      assert.ok(growth < 8 * 1024 * 1024, `heap grew by ${growth} bytes while Redis was down`);
      down = false;
      await server.restart();
      const restarted = Date.now();
      const resumed = await eventually(() => l.take('after-restart'), 1000);
      const resumeMs = Date.now() - restarted;
      running = false;
      await Promise.all(workers);
      assert.equal(resumed, true, `no decision within 1 s of the restart (${resumeMs} ms)`);
      assert.equal(admittedWhileDown, 0);
      assert.equal(uncoded, 0);
      // Never a hang: the slowest call settled within the store timeout plus scheduling slack.
      assert.ok(slowest < TIMEOUT_MS + 400, `a call took ${slowest} ms`);
      assert.deepEqual(unhandled, []);
    });
  });
}

async function rawFlush(port: number): Promise<void> {
  const { rawCommand } = await import('../support/redis-servers.js');
  assert.equal((await rawCommand(port, 'SCRIPT FLUSH'))?.trim(), '+OK');
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Tries `take` every 10 ms until it answers, for at most `withinMs`. */
async function eventually(take: () => Promise<unknown>, withinMs = 2000): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    try {
      await take();
      return true;
    } catch {
      await sleep(10);
    }
  }
  return false;
}
