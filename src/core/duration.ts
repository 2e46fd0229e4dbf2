import { MAX_TIMER_MS } from './bounds.js';
import { SluiceError, describeValue, optionError } from './errors.js';

/**
 * A duration: a string of a whole number and a unit: `ms`, `s`, `m`, `h`, `d`
 * (e.g. `"500ms"`, `"10s"`, `"10m"`, `"1h"`, `"1d"`).
 *
 * Bare numbers are not durations: `period: 60` reads as 60 seconds to one person and as 60 ms to
 * another, so sluice asks for the unit instead of guessing. Calendar units (months, years) are not
 * durations; use a calendar quota for those.
 */
export type Duration = `${number}${DurationUnit}`;

/** Units a duration string may carry. */
export type DurationUnit = 'ms' | 's' | 'm' | 'h' | 'd';

const unitMs: Record<DurationUnit, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const durationPattern = /^\s*(\d+)\s*(ms|s|m|h|d)\s*$/;
const examples = '"500ms", "10s", "10m", "1h", "1d"';

/**
 * Reads a {@link Duration} into whole milliseconds (> 0).
 *
 * Whole numbers only: fractional milliseconds would make token-bucket arithmetic inexact,
 * and a fractional unit ("1.5h") is better written in a smaller unit ("90m").
 *
 * @param option the option's name, for the error message
 * @throws SluiceError `SLUICE_DURATION` naming the option; for a bare number, the message
 *   suggests the string to write instead (`period: '60ms'` → `"60s"` or `"60ms"`)
 * @example parseDuration('10m', 'period') // 600000
 */
export function parseDuration(value: unknown, option: string): number {
  if (typeof value === 'number') {
    const hint =
      Number.isSafeInteger(value) && value > 0
        ? ' (add the unit to the number: "s" for seconds, "ms" for milliseconds)'
        : '';
    throw new SluiceError(
      'SLUICE_DURATION',
      `${option} must be a duration string with a unit, like ${examples}; received a bare number${hint}`,
    );
  }
  if (typeof value !== 'string') {
    throw new SluiceError(
      'SLUICE_DURATION',
      `${option} must be a duration string with a unit, like ${examples}; received ${describeType(value)}`,
    );
  }
  const match = durationPattern.exec(value);
  if (match === null) {
    throw new SluiceError(
      'SLUICE_DURATION',
      `${option} must be a whole number and a unit (ms, s, m, h, d), like ${examples}; received ${describeValue(value)}`,
    );
  }
  const ms = Number(match[1]) * unitMs[match[2] as DurationUnit];
  if (!Number.isSafeInteger(ms) || ms <= 0) {
    throw new SluiceError(
      'SLUICE_DURATION',
      `${option} must be a positive whole number of milliseconds; received ${describeValue(value)}`,
    );
  }
  return ms;
}

/**
 * Reads a {@link Duration} that a timer will wait for: at most 2^31 − 1 ms (about 24.8 days),
 * because a longer `setTimeout` fires after 1 ms instead.
 * @throws SluiceError `SLUICE_DURATION` as {@link parseDuration}, or when the duration is longer
 */
export function parseTimerDuration(value: unknown, option: string): number {
  const ms = parseDuration(value, option);
  if (ms > MAX_TIMER_MS) {
    throw new SluiceError(
      'SLUICE_DURATION',
      `${option} must be at most ${MAX_TIMER_MS} ms (about 24.8 days), the longest a timer can wait`,
    );
  }
  return ms;
}

/**
 * Reads a rule's duration option, at most `maxMs`: a duration string, never a bare number (whose
 * unit would be a guess).
 * @throws SluiceError `SLUICE_CONFIG` naming `option` and `expected` (a phrase like `'a duration
 *   string from "1ms" to "366d"'`), never the value
 */
export function parseRuleDuration(value: unknown, option: string, expected: string, maxMs: number): number {
  if (typeof value === 'number') throw optionError(option, `${expected}; a bare number has no unit`);
  let ms: number;
  try {
    ms = parseDuration(value, option);
  } catch {
    throw optionError(option, expected);
  }
  if (ms > maxMs) throw optionError(option, expected);
  return ms;
}

function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
