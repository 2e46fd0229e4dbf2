import { ENVOY_UNIT_WINDOWS } from '../../core/rules/fixed-window.js';

/** The units of envoyproxy/ratelimit's configuration and of the response's `current_limit`. */
export type EnvoyUnit = keyof typeof ENVOY_UNIT_WINDOWS;

/** Every unit, in the order of its seconds. */
export const ENVOY_UNITS = Object.keys(ENVOY_UNIT_WINDOWS) as EnvoyUnit[];

/**
 * Seconds per unit, counted from the Unix epoch as envoyproxy/ratelimit counts them: a week is
 * 7 days (starting on a Thursday, as the epoch did), a month 30 days and a year 365.
 */
export const UNIT_SECONDS: Readonly<Record<EnvoyUnit, number>> = {
  SECOND: 1,
  MINUTE: 60,
  HOUR: 3600,
  DAY: 86_400,
  WEEK: 604_800,
  MONTH: 2_592_000,
  YEAR: 31_536_000,
};

/**
 * The units a request's per-descriptor override may name (`envoy.type.v3.RateLimitUnit`): the
 * same names without WEEK, which that enumeration lacks.
 */
export const OVERRIDE_UNITS: ReadonlySet<string> = new Set(ENVOY_UNITS.filter((u) => u !== 'WEEK'));

/** Seconds until the window of `unit` that holds `nowMs` ends, as upstream computes it. */
export function secondsUntilReset(unit: EnvoyUnit, nowMs: number): number {
  const divider = UNIT_SECONDS[unit];
  return divider - (Math.floor(nowMs / 1000) % divider);
}
