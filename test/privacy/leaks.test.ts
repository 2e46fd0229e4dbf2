/**
 * No request value in errors or logs: keys, costs and per-call limits may come from a
 * request and may carry an e-mail address or an IP address. Whatever goes wrong (bad input, a
 * failing store whose driver quotes the key, a timeout), no error message, no message in the
 * `cause` chain and no log line may contain them.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FailingStore } from '../../src/testing/failing-store.js';
import {
  MemoryStore,
  calendarQuota,
  createCascade,
  createLimiter,
  manualClock,
  tokenBucket,
  type FailurePolicy,
  type Limiter,
} from '../../src/index.js';

const secrets = ['alice@example.com', '203.0.113.77', '2001:db8::beef', '4815162342'];
const leakPattern = /alice|example\.com|203\.0\.113|2001:db8|beef|4815162342/;

/** Every message of an error and its cause chain, and every own string property. */
function textsOf(error: unknown, seen = new Set<unknown>()): string[] {
  if (error === undefined || error === null || seen.has(error)) return [];
  seen.add(error);
  if (typeof error !== 'object') return [String(error)];
  const texts: string[] = [];
  for (const key of Object.getOwnPropertyNames(error)) {
    const value = (error as Record<string, unknown>)[key];
    if (typeof value === 'string') texts.push(value);
  }
  return [...texts, ...textsOf((error as { cause?: unknown }).cause, seen)];
}

function capture() {
  const lines: string[] = [];
  const errors: unknown[] = [];
  const logger = {
    warn: (details: Record<string, unknown>, message: string) => lines.push(message, JSON.stringify(details)),
  };
  return { lines, errors, logger };
}

/** Runs `run`, recording in `errors` what it throws or rejects with. */
async function recordErrors(errors: unknown[], run: () => unknown): Promise<void> {
  try {
    await run();
  } catch (error) {
    errors.push(error);
  }
}

/** Numbers a request could carry that are not valid costs or limits. */
const badNumbers: unknown[] = [4815162342.5, -4815162342, 4815162342e9, '4815162342', Number.NaN];

async function exercise(limiter: Limiter, errors: unknown[], other: Limiter): Promise<void> {
  const cascades = [
    createCascade([limiter, other]),
    createCascade([limiter, other], { mode: 'all-or-nothing' }),
  ];
  for (const secret of secrets) {
    for (const key of [secret, `${secret}\uD800`, { email: secret }, [secret]]) {
      await recordErrors(errors, () => limiter.take(key as string));
      await recordErrors(errors, () => limiter.peek(key as string));
      await recordErrors(errors, () => limiter.reset(key as string));
      for (const cascade of cascades) await recordErrors(errors, () => cascade.take(key as string));
    }
  }
  for (const value of badNumbers) {
    await recordErrors(errors, () => limiter.take(secrets[0]!, { cost: value as number }));
    await recordErrors(errors, () => limiter.take(secrets[0]!, { limit: value as number }));
    await recordErrors(errors, () => limiter.peek(secrets[0]!, { limit: value as number }));
    for (const cascade of cascades)
      await recordErrors(errors, () => cascade.take(secrets[1]!, { cost: value as number }));
  }
}

function assertNoLeak(lines: readonly string[], errors: readonly unknown[]): void {
  assert.ok(errors.length > 0, 'the calls failed, so there were messages to check');
  for (const error of errors) {
    for (const text of textsOf(error)) assert.doesNotMatch(text, leakPattern, `error text: ${text}`);
  }
  for (const line of lines) assert.doesNotMatch(line, leakPattern, `log line: ${line}`);
}

describe('no request value in errors or logs', () => {
  it('memory store: bad keys, costs and limits', async () => {
    const { lines, errors } = capture();
    const store = new MemoryStore();
    const clock = manualClock(0);
    const quota = createLimiter({ name: 'quota', rule: calendarQuota({ limit: 5 }), store, clock });
    const bucket = createLimiter({
      name: 'bucket',
      rule: tokenBucket({ limit: 5, period: '1m' }),
      store,
      clock,
    });
    await exercise(quota, errors, bucket);
    assertNoLeak(lines, errors);
  });

  for (const failure of ['closed', 'open', 'insurance'] as FailurePolicy[]) {
    it(`${failure}: a failing store whose driver quotes the key, a hung store, and bad input`, async () => {
      const { lines, errors, logger } = capture();
      const store = new FailingStore();
      const clock = manualClock(0);
      const quota = createLimiter({
        name: 'quota',
        rule: calendarQuota({ limit: 5 }),
        store,
        clock,
        failure,
        logger,
        timeout: '10ms',
      });
      const bucket = createLimiter({
        name: 'bucket',
        rule: tokenBucket({ limit: 5, period: '1m' }),
        store,
        clock,
        failure,
        logger,
        timeout: '10ms',
      });
      store.mode = 'error';
      store.error = Object.assign(
        new Error(`duplicate key value violates unique constraint: (key)=(${secrets.join(', ')})`),
        { code: '23505' },
      );
      await exercise(quota, errors, bucket);
      clock.advance('2m');
      store.mode = 'throw';
      await exercise(quota, errors, bucket);
      clock.advance('2m');
      store.mode = 'hang';
      for (const secret of secrets) await recordErrors(errors, () => quota.take(secret));
      assertNoLeak(lines, errors);
      if (failure === 'closed') {
        const first = errors.find((e) => (e as { code?: string }).code === 'SLUICE_STORE_UNAVAILABLE');
        assert.ok(first !== undefined);
        assert.match(String((first as Error).cause), /23505/, "the driver's code is kept");
      }
    });
  }
});
