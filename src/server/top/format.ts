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

/** The size `formatTop` fits: a terminal's, or unbounded when piped. */
export interface TopSize {
  columns: number;
  rows: number;
}

/**
 * The numbers of the dashboard as a terminal table: decisions per second by rule and outcome
 * (the totals since the start beside them), the refusal ratio over a minute, store latency, the
 * heaviest refused bucket ids and the last refusals. Bucket ids only, never a key.
 *
 * It fits `size`: numbers are never cut, names are (ending in `…`), figures of the header wrap
 * onto a second line rather than run off the edge, and at most `rows` lines are returned (the
 * header and the table's headings first; the rules, then the offenders and the last refusals,
 * as many as fit), so that a terminal never scrolls the header away.
 */
export function formatTop(snapshot: Snapshot, size: TopSize = { columns: 100, rows: Infinity }): string[] {
  const width = size.columns;
  const time = new Date(snapshot.at).toISOString().slice(11, 19);
  const reload = snapshot.policy.reload;
  const header = [
    ...wrap(
      'sluice top',
      [
        `${time} UTC`,
        `store ${snapshot.policy.store}`,
        `policy ${snapshot.policy.hash}`,
        ...(reload === null ? [] : [`last reload ${reload.result}`]),
      ],
      width,
    ),
    ...wrap(
      'all rules:',
      [
        ...COLUMNS.map(([o, h]) => `${h.toLowerCase()} ${rate(snapshot.perSecond[o])}/s`),
        `refusal ratio ${ratio(snapshot.refusalRatio)}`,
      ],
      width,
    ),
    `store latency p50 ${ms(snapshot.latency.p50Ms)}  p99 ${ms(snapshot.latency.p99Ms)}`,
    '',
    cut('rates per second; RATIO over 1 min; TOTAL admitted/refused/shadow', width),
  ];
  const table = rulesTable(snapshot, width);
  const lines = [...header, ...table.slice(0, 1)];
  const room = size.rows - lines.length;
  const rules = table.slice(1);
  if (rules.length > room) {
    lines.push(...rules.slice(0, Math.max(0, room - 1)));
    if (room > 0) lines.push(`  … ${rules.length - room + 1} more rules`);
  } else lines.push(...rules, ...extras(snapshot, table.nameWidth));
  return lines.slice(0, size.rows).map((line) => cut(line, width));
}

/** The rules table, its heading first: every number whole, the names cut to what is left. */
function rulesTable(snapshot: Snapshot, width: number): string[] & { nameWidth: number } {
  const rows = snapshot.rules.map((rule) => ({
    name: rule.mode === 'shadow' ? `${rule.name} (shadow)` : rule.name,
    cells: [
      ...COLUMNS.map(([o]) => rate(rule.perSecond[o])),
      ratio(rule.refusalRatio),
      `${rule.total.admitted ?? 0}/${rule.total.refused ?? 0}/${rule.total['shadow-refused'] ?? 0}`,
    ],
  }));
  const headings = [...COLUMNS.map(([, h]) => h), 'RATIO', 'TOTAL a/r/s'];
  const widths = headings.map((h, i) => Math.max(h.length, ...rows.map((r) => r.cells[i]!.length)));
  const numbers = widths.reduce((sum, w) => sum + w + 1, 0);
  const longest = Math.max(4, ...rows.map((r) => r.name.length));
  const nameWidth = Math.max(4, Math.min(longest, width - numbers));
  const line = (name: string, cells: string[]) =>
    [
      fit(name, nameWidth),
      ...cells.map((c, i) => (i === cells.length - 1 ? c : c.padStart(widths[i]!))),
    ].join(' ');
  const lines = [line('RULE', headings), ...rows.map((r) => line(r.name, r.cells))];
  return Object.assign(lines, { nameWidth });
}

/** The heaviest refused ids and the last refusals, under the rules. */
function extras(snapshot: Snapshot, nameWidth: number): string[] {
  const lines: string[] = [];
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
        `  ${fit(limit, nameWidth)} ${kind.padEnd(8)} ${o.id.padEnd(30)} ${o.count}${o.error > 0 ? ` ±${o.error}` : ''}`,
      );
  }
  if (snapshot.recent.length > 0) {
    lines.push('', 'RECENT REFUSALS (sampled)');
    for (const r of snapshot.recent.slice(0, 5)) {
      const label = OUTCOME_LABELS.find(([o]) => o === r.outcome)?.[1] ?? r.outcome;
      lines.push(
        `  ${new Date(r.at).toISOString().slice(11, 19)} ${fit(r.limit, nameWidth)} ${label.padEnd(19)} ${r.id}`,
      );
    }
  }
  return lines;
}

/** `items` after `lead`, two spaces apart, onto as many lines as `width` needs (indented). */
function wrap(lead: string, items: readonly string[], width: number): string[] {
  const lines: string[] = [];
  let line = lead;
  for (const item of items) {
    if (line.length + 2 + item.length > width && line.trim() !== '') {
      lines.push(line);
      line = `  ${item}`;
    } else line = `${line}  ${item}`;
  }
  lines.push(line);
  return lines;
}

/** A name in exactly `width` characters: padded, or cut with `…`. */
function fit(name: string, width: number): string {
  return name.length <= width ? name.padEnd(width) : `${name.slice(0, width - 1)}…`;
}

/** A line no wider than the terminal (what only a terminal too narrow for the numbers needs). */
function cut(line: string, width: number): string {
  return line.length > width ? line.slice(0, width) : line;
}
