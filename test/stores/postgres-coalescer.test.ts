/**
 * The PostgreSQL store's coalescer through its own contract, without a database: takes that wait
 * for a slot share one statement (one group per bucket and cost, its takes answered in order from
 * the bucket's row), a take under another `now` on the application's time leaves on its own, a
 * statement that answers too few rows or fails rejects its takes, and a statement that never
 * answers times its takes out.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Decision } from '../../src/index.js';
import type { PostgresRow } from '../../src/stores/postgres/index.js';
import {
  Coalescer,
  type BatchSender,
  type CoalescerLimits,
  type TakeBatch,
} from '../../src/stores/postgres/coalescer.js';
import type { TimeSource } from '../../src/stores/shared/time-source.js';

/** A statement sent: its batch, answered by the test. */
interface Sent {
  readonly batch: TakeBatch;
  answer(rows: readonly PostgresRow[]): void;
  fail(error: unknown): void;
}

/** A sender that records each batch, and decides each take as "its index among its group's takes". */
function recordingSender(): { sender: BatchSender; sent: Sent[] } {
  const sent: Sent[] = [];
  const sender: BatchSender = {
    send: (batch) => new Promise((resolve, reject) => sent.push({ batch, answer: resolve, fail: reject })),
    failure: (error) => error,
    decisions: () => {
      let taken = 0;
      return {
        start: () => {
          taken = 0;
        },
        next: (cost) => ({ allowed: true, remaining: taken++, cost }) as unknown as Decision,
      };
    },
  };
  return { sender, sent };
}

function limits(timeSource: TimeSource, timeoutMs = 1000): CoalescerLimits {
  return { replies: { lastReplyAt: 0 }, timeSource, timeoutMs, inFlight: 1, maxKeys: 256 };
}

/** Queues a take and returns its decision's promise. */
function take(coalescer: Coalescer, bucket: string, cost: number, now = 0): Promise<Decision> {
  return new Promise((resolve, reject) => coalescer.add(bucket, cost, undefined, now, { resolve, reject }));
}

/** Lets the microtasks and one turn of the event loop run (clocks start, slots free). */
const turn = () => new Promise((resolve) => setImmediate(resolve));

/** The groups of a batch as bucket → [cost, takes]. */
function groupsOf(batch: TakeBatch): Record<string, [number, number]> {
  const groups: Record<string, [number, number]> = {};
  for (const [bucket, group] of batch.groups) groups[bucket] = [group.cost, group.waiters.length];
  return groups;
}

describe('PostgreSQL coalescer', () => {
  it('merges the takes that wait for a slot into one statement, one group per bucket and cost', async () => {
    const { sender, sent } = recordingSender();
    const coalescer = new Coalescer(limits('store'), sender);
    const first = take(coalescer, 'a', 1);
    const waiting = [take(coalescer, 'a', 1), take(coalescer, 'a', 1), take(coalescer, 'b', 2)];
    const otherCost = take(coalescer, 'a', 3);
    await turn();
    assert.equal(sent.length, 2, 'the first take and the one of another cost leave at once');
    assert.deepEqual(groupsOf(sent[0]!.batch), { a: [1, 1] });
    assert.deepEqual(groupsOf(sent[1]!.batch), { a: [3, 1] });
    sent[0]!.answer([{ bucket: 'a' }]);
    sent[1]!.answer([{ bucket: 'a' }]);
    assert.equal(((await first) as unknown as { remaining: number }).remaining, 0);
    await otherCost;
    await turn();
    await turn();
    assert.equal(sent.length, 3, 'the waiting takes leave together once a slot is free');
    assert.deepEqual(groupsOf(sent[2]!.batch), { a: [1, 2], b: [2, 1] });
    sent[2]!.answer([{ bucket: 'b' }, { bucket: 'a' }]);
    const decisions = (await Promise.all(waiting)) as unknown as { remaining: number }[];
    assert.deepEqual(
      decisions.map((d) => d.remaining),
      [0, 1, 0],
      "a group's takes are answered in order from its row",
    );
  });

  it("keeps takes of another now out of a waiting statement on the application's time", async () => {
    const { sender, sent } = recordingSender();
    const coalescer = new Coalescer(limits('app'), sender);
    void take(coalescer, 'a', 1, 10);
    void take(coalescer, 'b', 1, 10);
    void take(coalescer, 'c', 1, 11);
    await turn();
    assert.deepEqual(
      sent.map((s) => [s.batch.now, Object.keys(groupsOf(s.batch))]),
      [
        [10, ['a']],
        [11, ['c']],
      ],
    );
  });

  it('rejects the takes of a statement that fails or answers too few rows', async () => {
    const { sender, sent } = recordingSender();
    const coalescer = new Coalescer({ ...limits('store'), inFlight: 0 }, sender);
    const failed = take(coalescer, 'a', 1);
    const missing = take(coalescer, 'b', 1);
    await turn();
    sent[0]!.fail(new Error('driver error'));
    sent[1]!.answer([]);
    await assert.rejects(failed, /driver error/);
    await assert.rejects(missing, { code: 'SLUICE_STORE_UNAVAILABLE' });
  });

  it('times out the takes of a statement that never answers', async () => {
    const { sender } = recordingSender();
    const coalescer = new Coalescer(limits('store', 20), sender);
    // The coalescer's timers do not hold the process open: this one does, until the take is out.
    const alive = setTimeout(() => {}, 1000);
    await assert.rejects(take(coalescer, 'a', 1), { code: 'SLUICE_STORE_TIMEOUT' });
    clearTimeout(alive);
  });
});
