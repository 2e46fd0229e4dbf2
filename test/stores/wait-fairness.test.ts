/**
 * Waiting is fair across processes: several processes wait for slots of one key on one shared
 * store (Redis, PostgreSQL, each deciding on its own clock) and are served in the order the
 * store took their reservations, each its own slot.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { PostgresStore } from '../../src/stores/postgres/index.js';
import { postgresUrl, redisUrl, runId, skipUnlessReachable } from '../support/services.js';
import { dropSchema, runSchema, testPool } from '../support/postgres.js';

const child = fileURLToPath(new URL('./wait-fairness.child.ts', import.meta.url));
const WAITERS = 4;
const SLOT_MS = 500;

interface Waited {
  allowed: boolean;
  reservedAt: number;
  waitedMs: number;
  servedAt: number;
}

/** Starts the waiters, lets them go together, and returns what each reports. */
async function wait(kind: string, where: string, name: string): Promise<Waited[]> {
  const children = Array.from({ length: WAITERS }, () =>
    spawn(process.execPath, ['--import', 'tsx', child, kind, where, name], {
      stdio: ['pipe', 'pipe', 'inherit'],
      timeout: 30_000,
    }),
  );
  const lines = children.map((c) => {
    let buffer = '';
    const lines: string[] = [];
    let wake: (() => void) | undefined;
    c.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      for (let i = buffer.indexOf('\n'); i !== -1; i = buffer.indexOf('\n')) {
        lines.push(buffer.slice(0, i));
        buffer = buffer.slice(i + 1);
      }
      wake?.();
    });
    return async (): Promise<string> => {
      while (lines.length === 0) {
        const exited = once(c, 'exit').then(() => {
          throw new Error('a waiter exited before it answered');
        });
        await Promise.race([new Promise<void>((resolve) => (wake = resolve)), exited]);
      }
      return lines.shift()!;
    };
  });
  try {
    for (const next of lines) assert.equal(await next(), 'ready');
    for (const c of children) c.stdin.write('go\n');
    return await Promise.all(lines.map(async (next) => JSON.parse(await next()) as Waited));
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill();
  }
}

function assertServedInOrder(waited: Waited[]): void {
  assert.ok(waited.every((w) => w.allowed));
  const byReservation = [...waited].sort((a, b) => a.reservedAt + a.waitedMs - (b.reservedAt + b.waitedMs));
  const slots = byReservation.map((w) => w.reservedAt + w.waitedMs);
  // Each waiter holds a slot of its own, half a second after the one before (by this
  // machine's clock, read a moment after the store answered: half a slot of slack).
  for (let i = 1; i < slots.length; i++)
    assert.ok(slots[i]! - slots[i - 1]! >= SLOT_MS / 2, `slots ${slots}`);
  const byService = [...waited].sort((a, b) => a.servedAt - b.servedAt);
  assert.deepEqual(byService, byReservation, 'served in the order the store took the reservations');
}

describe('waiters of several processes on one key are served in reservation order', async () => {
  const redisSkip = await skipUnlessReachable('Redis', redisUrl);
  const postgresSkip = await skipUnlessReachable('PostgreSQL', postgresUrl);

  it('on Redis', { skip: redisSkip }, async () => {
    assertServedInOrder(await wait('redis', `sluice-test:${runId}:fair:`, 'fair'));
  });

  describe('on PostgreSQL', { skip: postgresSkip }, () => {
    const schema = runSchema('fair');
    let pool: pg.Pool;
    before(async () => {
      pool = testPool();
      await new PostgresStore({ client: pool, schema }).migrate();
    });
    after(async () => {
      await dropSchema(pool, schema);
      await pool.end();
    });
    it('served in order', async () => {
      assertServedInOrder(await wait('postgres', schema, 'fair'));
    });
  });
});
