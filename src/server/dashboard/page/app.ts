/** The dashboard page: a snapshot a second over Server-Sent Events, drawn into the panels. */
import 'uplot/dist/uPlot.min.css';
import './style.css';
import { OUTCOME_LABELS, type DecisionOutcome, type Point, type Snapshot } from '../snapshot-types.js';
import { TimeChart } from './charts.js';
import { byId, h } from './dom.js';
import { count, millis, perSecond } from './format.js';
import { bindBucketActions } from './actions.js';
import { Inspector } from './inspector.js';
import { LATENCY_STYLE, OUTCOME_STYLE } from './palette.js';
import {
  renderNow,
  renderOffenders,
  renderPolicy,
  renderRecent,
  renderRules,
  renderStore,
} from './render.js';

/** Points the charts keep: five minutes. */
const KEPT = 300;

const points: Point[] = [];
const outcomes = OUTCOME_LABELS.filter(([o]) => o !== 'skipped');
const decisions = new TimeChart(
  byId('decisions-chart'),
  outcomes.map(([outcome, label]) => ({
    label,
    colour: OUTCOME_STYLE[outcome].colour,
    dash: OUTCOME_STYLE[outcome].dash,
    width: OUTCOME_STYLE[outcome].width,
    value: (v) => (v === null ? '–' : perSecond(v)),
  })),
  'per second',
);
const latency = new TimeChart(
  byId('latency-chart'),
  (['p50', 'p99'] as const).map((q) => ({
    label: q,
    colour: LATENCY_STYLE[q].colour,
    dash: LATENCY_STYLE[q].dash,
    value: (v) => millis(v),
  })),
  'ms',
);
const chartRule = byId<HTMLSelectElement>('chart-rule');
const inspector = new Inspector();
bindBucketActions();
const status = byId('status');
let latest: Snapshot | undefined;

chartRule.addEventListener('change', drawCharts);

function drawCharts(): void {
  const rule = chartRule.value;
  const rates = (p: Point): Partial<Record<DecisionOutcome, number>> =>
    rule === '' ? p.perSecond : (p.rules[rule] ?? {});
  const times = points.map((p) => p.at);
  decisions.update(
    times,
    outcomes.map(([outcome]) => points.map((p) => rates(p)[outcome] ?? 0)),
  );
  latency.update(times, [points.map((p) => p.p50Ms), points.map((p) => p.p99Ms)]);
  // The charts' words for a screen reader: the last point's values.
  const last = points.at(-1);
  if (last !== undefined) {
    const now = rates(last);
    byId('decisions-chart').setAttribute(
      'aria-label',
      `Decisions per second${rule === '' ? '' : ` of ${rule}`}, last ${points.length} seconds; now ` +
        outcomes.map(([o, label]) => `${label} ${perSecond(now[o])}`).join(', '),
    );
    byId('latency-chart').setAttribute(
      'aria-label',
      `Store latency now: p50 ${millis(last.p50Ms)}, p99 ${millis(last.p99Ms)}`,
    );
  }
}

function ruleOptions(snapshot: Snapshot): void {
  const names = snapshot.rules.map((r) => r.name);
  const shown = Array.from(chartRule.options, (o) => o.value).slice(1);
  if (names.join('\n') === shown.join('\n')) return;
  const chosen = chartRule.value;
  chartRule.replaceChildren(
    h('option', { value: '' }, 'all rules'),
    ...names.map((n) => h('option', { value: n }, n)),
  );
  chartRule.value = names.includes(chosen) ? chosen : '';
}

function render(snapshot: Snapshot): void {
  latest = snapshot;
  ruleOptions(snapshot);
  renderNow(snapshot);
  renderRules(snapshot);
  renderOffenders(snapshot);
  renderRecent(snapshot);
  renderStore(snapshot);
  renderPolicy(snapshot);
  inspector.update(snapshot.rules);
  const refused = snapshot.rules.reduce((n, r) => n + (r.total.refused ?? 0), 0);
  status.dataset.state = 'live';
  status.textContent = `live · ${snapshot.rules.length} rules · ${count(refused)} refused since the start`;
}

const events = new EventSource('/dashboard/events');
events.addEventListener('history', (event) => {
  points.splice(0, points.length, ...(JSON.parse((event as MessageEvent<string>).data) as Point[]));
  drawCharts();
});
events.addEventListener('snapshot', (event) => {
  const snapshot = JSON.parse((event as MessageEvent<string>).data) as Snapshot;
  if (points.at(-1)?.at !== snapshot.at)
    points.push({
      at: snapshot.at,
      perSecond: snapshot.perSecond,
      rules: Object.fromEntries(snapshot.rules.map((r) => [r.name, r.perSecond])),
      p50Ms: snapshot.latency.p50Ms,
      p99Ms: snapshot.latency.p99Ms,
    });
  if (points.length > KEPT) points.splice(0, points.length - KEPT);
  render(snapshot);
  drawCharts();
});
events.addEventListener('error', () => {
  status.dataset.state = 'down';
  status.textContent =
    events.readyState === EventSource.CLOSED
      ? 'disconnected: reload the page (signed out, or the server stopped)'
      : `reconnecting…${latest === undefined ? '' : ' (the figures below are from the last snapshot)'}`;
});
