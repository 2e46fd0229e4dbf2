/**
 * Reading a key's TTL exactly, whatever the time the calls take: Redis' own clock before and
 * after a write, and the key's absolute expiry (PEXPIRETIME, Redis 7).
 */
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';

/** What the store adds to every TTL on the app's time (APP_TIME_SLACK_MS in src/stores/redis/rule-buckets.ts). */
export const APP_SLACK = 60_000;

/** Redis' clock in whole ms. */
export async function serverMs(redis: Redis): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/**
 * Runs `write` and returns the key's expiry as an interval of TTLs: Redis set it at some
 * instant between the two readings of its clock, so `ttl` = expiry - that instant lies in
 * [expiry - after, expiry - before].
 */
export async function ttlWindow(
  redis: Redis,
  key: string,
  write: () => Promise<unknown>,
): Promise<[number, number]> {
  const start = await serverMs(redis);
  await write();
  const end = await serverMs(redis);
  const expiry = Number(await redis.pexpiretime(key));
  assert.ok(expiry > 0, 'the key exists and has a TTL');
  return [expiry - end, expiry - start];
}

/** Asserts that `ttl` is a TTL the interval from {@link ttlWindow} allows. */
export function assertTtl([least, most]: [number, number], ttl: number, message: string): void {
  assert.ok(least <= ttl && ttl <= most, `${message}: TTL ${ttl} outside [${least}, ${most}]`);
}
