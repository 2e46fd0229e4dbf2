import { readFileSync } from 'node:fs';
import type { Clock } from '../../core/clock.js';

/**
 * The clock of the server under test (Envoy's rate limit service and the policy's limiters): with
 * `SLUICE_TEST_CLOCK_FILE` in the environment, the time (ms since the epoch) written in that
 * file, read at every call, so that a test of the command makes window and bucket arithmetic
 * exact. Neither the policy file nor a request can reach it; without the variable it is the
 * system clock.
 */
export function testClock(env: Readonly<Record<string, string | undefined>>): Clock | undefined {
  const file = env.SLUICE_TEST_CLOCK_FILE;
  if (file === undefined || file === '') return undefined;
  return () => Number(readFileSync(file, 'utf8'));
}
