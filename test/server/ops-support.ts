/** Helpers of the operations tests: the server's log, its metrics, and replacing its policy file. */
import { renameSync, writeFileSync } from 'node:fs';
import { logLines } from './log-scan.js';
import type { RunningSluice } from './serve-support.js';

export interface LogEntry {
  level: string;
  msg: string;
  event?: string;
  [field: string]: unknown;
}

/** The server's log so far, parsed. */
export function logOf(sluice: RunningSluice): LogEntry[] {
  return logLines(sluice.output()).map((line) => JSON.parse(line) as LogEntry);
}

/** Waits until the log holds `count` entries of `event` (at most 10 s); returns them. */
export async function waitForLog(sluice: RunningSluice, event: string, count = 1): Promise<LogEntry[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const found = logOf(sluice).filter((entry) => entry.event === event);
    if (found.length >= count) return found;
    if (Date.now() > deadline)
      throw new Error(`no ${count} "${event}" log entries after 10 s:\n${sluice.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Replaces the policy file at once, as editors and config management do (write aside, rename). */
export function replacePolicy(path: string, text: string): void {
  const aside = `${path}.next`;
  writeFileSync(aside, text);
  renameSync(aside, path);
}

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition. */
export function samplesOf(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (match === null) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, name, value] of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
      labels[name!] = value!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** The value of the sample `name` with exactly these labels (0 when absent). */
export function valueOf(
  samples: readonly Sample[],
  name: string,
  labels: Record<string, string> = {},
): number {
  const wanted = Object.entries(labels);
  const found = samples.find(
    (s) =>
      s.name === name &&
      Object.keys(s.labels).length === wanted.length &&
      wanted.every(([k, v]) => s.labels[k] === v),
  );
  return found?.value ?? 0;
}

/** GET /metrics, parsed. */
export async function metricsOf(
  sluice: RunningSluice,
): Promise<{ contentType: string; samples: Sample[]; text: string }> {
  const response = await fetch(`${sluice.url}/metrics`, { signal: AbortSignal.timeout(10_000) });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`/metrics answered ${response.status}`);
  return { contentType: response.headers.get('content-type') ?? '', samples: samplesOf(text), text };
}
