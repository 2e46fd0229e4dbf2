import { OUTCOME_LABELS, type OutcomeCounts, type Snapshot } from '../dashboard/snapshot-types.js';

/** Columns of the rules table: short headings for a terminal. */
const COLUMNS: readonly [keyof OutcomeCounts, string][] = [
  ['admitted', 'ADMIT'],
  ['refused', 'REFUSE'],
  ['shadow-refused', 'SHADOW'],
  ['failed-open', 'F-OPEN'],
  ['failed-closed', 'F-CLOSED'],
  ['denied', 'DENIED'],
];

const rate = (n: number | undefined) => (n ?? 0).toFixed(1);
const ratio = (r: number | null) => (r === null ? '-' : `${(r * 100).toFixed(1)}%`);
const ms = (v: number | null) => (v === null ? '-' : `${v.toFixed(2)} ms`);

/**
 * The numbers of the dashboard as a terminal table: decisions per second by rule and outcome
 * (the totals since the start beside them), the refusal ratio over a minute, store latency, the
 * heaviest refused bucket ids and the last refusals. Bucket ids only, never a key.
 */
export function formatTop(snapshot: Snapshot, width = 100): string {
  const time = new Date(snapshot.at).toISOString().slice(11, 19);
  const reload = snapshot.policy.reload;
  const lines = [
    `sluice top  ${time} UTC  store ${snapshot.policy.store}  policy ${snapshot.policy.hash}` +
      (reload === null ? '' : `  last reload ${reload.result}`),
    `all rules: ${COLUMNS.map(([o, h]) => `${h.toLowerCase()} ${rate(snapshot.perSecond[o])}/s`).join('  ')}  refusal ratio ${ratio(snapshot.refusalRatio)}`,
    `store latency p50 ${ms(snapshot.latency.p50Ms)}  p99 ${ms(snapshot.latency.p99Ms)}`,
    '',
  ];
  const nameWidth = Math.max(4, ...snapshot.rules.map((r) => r.name.length + (r.mode === 'shadow' ? 9 : 0)));
  lines.push(
    [
      'RULE'.padEnd(nameWidth),
      ...COLUMNS.map(([, h]) => `${h}/s`.padStart(10)),
      'RATIO'.padStart(7),
      '  TOTAL adm/ref/shadow',
    ].join(' '),
  );
  for (const rule of snapshot.rules) {
    const name = rule.mode === 'shadow' ? `${rule.name} (shadow)` : rule.name;
    lines.push(
      [
        name.padEnd(nameWidth),
        ...COLUMNS.map(([o]) => rate(rule.perSecond[o]).padStart(10)),
        ratio(rule.refusalRatio).padStart(7),
        `  ${rule.total.admitted ?? 0}/${rule.total.refused ?? 0}/${rule.total['shadow-refused'] ?? 0}`,
      ].join(' '),
    );
  }
  const offenders = snapshot.rules.flatMap((rule) =>
    rule.limits.flatMap((limit) => [
      ...limit.refused.slice(0, 3).map((o) => [limit.name, 'refused', o] as const),
      ...limit.shadow.slice(0, 3).map((o) => [limit.name, 'shadow', o] as const),
    ]),
  );
  if (offenders.length > 0) {
    lines.push('', 'TOP OFFENDERS (pseudonymous bucket ids)');
    for (const [limit, kind, o] of offenders)
      lines.push(
        `  ${limit.padEnd(nameWidth)} ${kind.padEnd(8)} ${o.id.padEnd(32)} ${o.count}${o.error > 0 ? ` ±${o.error}` : ''}`,
      );
  }
  if (snapshot.recent.length > 0) {
    lines.push('', 'RECENT REFUSALS (sampled)');
    for (const r of snapshot.recent.slice(0, 5)) {
      const label = OUTCOME_LABELS.find(([o]) => o === r.outcome)?.[1] ?? r.outcome;
      lines.push(
        `  ${new Date(r.at).toISOString().slice(11, 19)} ${r.limit.padEnd(nameWidth)} ${label.padEnd(20)} ${r.id}`,
      );
    }
  }
  return `${lines.map((line) => (line.length > width ? line.slice(0, width) : line)).join('\n')}\n`;
}
