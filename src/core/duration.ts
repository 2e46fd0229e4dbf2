import { SluiceError, describeValue } from './errors.js';

/**
 * A duration: a whole number of milliseconds, or a string of a whole number and a unit:
 * `ms`, `s`, `m`, `h`, `d` (e.g. `"500ms"`, `"10s"`, `"10m"`, `"1h"`, `"1d"`).
 * Calendar units (months, years) are not durations; use a calendar quota for those.
 */
export type Duration = number | `${number}${DurationUnit}`;

/** Units a duration string may carry. */
export type DurationUnit = 'ms' | 's' | 'm' | 'h' | 'd';

const unitMs: Record<DurationUnit, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const durationPattern = /^\s*(\d+)\s*(ms|s|m|h|d)\s*$/;

/**
 * Reads a {@link Duration} into whole milliseconds (> 0).
 *
 * Whole numbers only: fractional milliseconds would make token-bucket arithmetic inexact,
 * and a fractional unit ("1.5h") is better written in a smaller unit ("90m").
 *
 * @param option the option's name, for the error message
 * @throws SluiceError `SLUICE_DURATION` naming the option and the value received
 * @example parseDuration('10m', 'period') // 600000
 */
export function parseDuration(value: unknown, option: string): number {
  let ms: number;
  if (typeof value === 'number') {
    ms = value;
  } else if (typeof value === 'string') {
    const match = durationPattern.exec(value);
    if (match === null) {
      throw new SluiceError(
        'SLUICE_DURATION',
        `${option} must be a whole number of milliseconds or a string like "500ms", "10s", "10m", "1h", "1d"; received ${describeValue(value)}`,
      );
    }
    ms = Number(match[1]) * unitMs[match[2] as DurationUnit];
  } else {
    throw new SluiceError(
      'SLUICE_DURATION',
      `${option} must be a duration (number of milliseconds or a string like "10m"); received ${describeValue(value)}`,
    );
  }
  if (!Number.isSafeInteger(ms) || ms <= 0) {
    throw new SluiceError(
      'SLUICE_DURATION',
      `${option} must be a positive whole number of milliseconds; received ${describeValue(value)}`,
    );
  }
  return ms;
}
