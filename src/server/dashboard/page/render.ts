import { OUTCOME_LABELS, type RuleView, type Snapshot } from '../snapshot-types.js';
import { byId, figures, h } from './dom.js';
import { clock, count, millis, percent, perSecond, retry } from './format.js';
import { OUTCOME_STYLE } from './palette.js';

/** The outcomes every rule row shows; the rarer ones only once they happened. */
const ALWAYS = new Set(['admitted', 'refused', 'shadow-refused']);

export function renderNow(snapshot: Snapshot): void {
  figures(byId('now'), [
    ['admitted', perSecond(snapshot.perSecond.admitted), 'admitted'],
    ['refused', perSecond(snapshot.perSecond.refused), 'refused'],
    ['shadow would refuse', perSecond(snapshot.perSecond['shadow-refused']), 'shadow-refused'],
    ['refusal ratio (1 min)', percent(snapshot.refusalRatio), 'refusal-ratio'],
  ]);
}

export function renderRules(snapshot: Snapshot): void {
  const shown = OUTCOME_LABELS.filter(
    ([outcome]) => ALWAYS.has(outcome) || snapshot.rules.some((r) => (r.total[outcome] ?? 0) > 0),
  );
  const table = byId<HTMLTableElement>('rules-table');
  table.tHead!.replaceChildren(
    h(
      'tr',
      {},
      h('th', { scope: 'col' }, 'Rule'),
      h('th', { scope: 'col' }, 'Limits'),
      ...shown.map(([outcome, label]) => h('th', { scope: 'col', class: 'num' }, swatch(outcome), label)),
      h('th', { scope: 'col', class: 'num' }, 'Refusal ratio (1 min)'),
    ),
  );
  table.tBodies[0]!.replaceChildren(
    ...snapshot.rules.map((rule) =>
      h(
        'tr',
        { 'data-rule': rule.name },
        h(
          'th',
          { scope: 'row' },
          rule.name,
          ...(rule.mode === 'shadow' ? [' ', h('span', { class: 'mode-shadow' }, 'shadow')] : []),
        ),
        h('td', {}, rule.limits.map((l) => l.text).join('; ')),
        ...shown.map(([outcome]) =>
          h(
            'td',
            { class: 'num', 'data-outcome': outcome, 'data-total': String(rule.total[outcome] ?? 0) },
            count(rule.total[outcome]),
            h('span', { class: 'rate' }, perSecond(rule.perSecond[outcome])),
          ),
        ),
        h('td', { class: 'num', 'data-ratio': '' }, percent(rule.refusalRatio)),
      ),
    ),
  );
}

function swatch(outcome: keyof typeof OUTCOME_STYLE): HTMLElement {
  const style = OUTCOME_STYLE[outcome];
  const mark = h('span', { class: 'swatch', 'aria-hidden': 'true' });
  mark.style.borderTopColor = style.colour;
  mark.style.borderTopStyle = style.dash.length === 0 ? 'solid' : 'dashed';
  return mark;
}

export function renderOffenders(snapshot: Snapshot): void {
  const blocks: HTMLElement[] = [];
  for (const rule of snapshot.rules)
    for (const limit of rule.limits)
      for (const [kind, list] of [
        ['refused', limit.refused],
        ['shadow', limit.shadow],
      ] as const) {
        if (list.length === 0) continue;
        const title =
          kind === 'refused' ? `Refused by ${limit.name}` : `Would be refused by ${limit.name} (shadow)`;
        blocks.push(
          h(
            'div',
            { class: 'scroll', role: 'region', 'aria-label': title, tabindex: '0' },
            h(
              'table',
              { 'data-offenders': `${rule.name}/${limit.name}/${kind}` },
              h('caption', {}, title),
              h(
                'thead',
                {},
                h(
                  'tr',
                  {},
                  h('th', { scope: 'col' }, '#'),
                  h('th', { scope: 'col' }, 'Bucket id'),
                  h('th', { scope: 'col', class: 'num' }, kind === 'refused' ? 'Refusals' : 'Would refuse'),
                  h('th', { scope: 'col' }, 'Actions'),
                ),
              ),
              h(
                'tbody',
                {},
                ...list.map((o, i) =>
                  h(
                    'tr',
                    { 'data-id': o.id, 'data-count': String(o.count) },
                    h('td', {}, String(i + 1)),
                    h('td', { class: 'id' }, o.id),
                    h(
                      'td',
                      { class: 'num' },
                      o.error > 0 ? `${count(o.count)} ± ${count(o.error)}` : count(o.count),
                    ),
                    h('td', { class: 'actions' }, ...actionButtons(rule, o.id)),
                  ),
                ),
              ),
            ),
          ),
        );
      }
  const body = byId('offenders-body');
  if (blocks.length === 0) body.replaceChildren(h('p', { class: 'muted' }, 'No refusals yet.'));
  else body.replaceChildren(...blocks);
}

/** Reset (and, for a rule that locks keys out, unblock) buttons for a bucket of a rule. */
export function actionButtons(rule: Pick<RuleView, 'name' | 'lockout'>, id: string): HTMLElement[] {
  const button = (action: 'reset' | 'unblock', label: string) =>
    h(
      'button',
      {
        type: 'button',
        'data-action': action,
        'data-rule': rule.name,
        'data-id': id,
        'aria-label': `${label} ${id} in ${rule.name}`,
      },
      label,
    );
  return rule.lockout ? [button('reset', 'Reset'), button('unblock', 'Unblock')] : [button('reset', 'Reset')];
}

export function renderRecent(snapshot: Snapshot): void {
  const body = byId<HTMLTableElement>('recent-table').tBodies[0]!;
  body.replaceChildren(
    ...snapshot.recent.map((r) =>
      h(
        'tr',
        { 'data-outcome': r.outcome },
        h('td', {}, clock(r.at)),
        h('td', {}, r.limit === r.rule ? r.rule : `${r.rule} / ${r.limit}`),
        h('td', {}, r.outcome === 'refused' ? 'refused' : 'shadow would refuse'),
        h('td', { class: 'id' }, r.id),
        h('td', {}, retry(r.retryAfterMs)),
      ),
    ),
  );
}

export function renderStore(snapshot: Snapshot): void {
  const { latency } = snapshot;
  figures(byId('store-figures'), [
    ['store', snapshot.policy.store],
    ['p50 (10 s)', millis(latency.p50Ms), 'p50'],
    ['p99 (10 s)', millis(latency.p99Ms), 'p99'],
    ['store calls (10 s)', count(latency.samples)],
  ]);
  byId<HTMLTableElement>('failures-table').tBodies[0]!.replaceChildren(
    ...snapshot.rules.map((rule: RuleView) =>
      h(
        'tr',
        { 'data-rule': rule.name },
        h('th', { scope: 'row' }, rule.name),
        h('td', { class: 'num' }, count(rule.failures.open)),
        h('td', { class: 'num' }, count(rule.failures.closed)),
        h('td', { class: 'num' }, count(rule.failures.insurance)),
      ),
    ),
  );
}

export function renderPolicy(snapshot: Snapshot): void {
  const { policy } = snapshot;
  const reload = policy.reload;
  figures(byId('policy-figures'), [
    ['hash', policy.hash],
    ['loaded', policy.loadedAt === null ? '–' : clock(policy.loadedAt)],
    ['bucket ids', policy.ids === 'hmac' ? 'HMAC of the key (pseudonym secret)' : 'fingerprint (no secret)'],
    [
      'last reload',
      reload === null ? 'none since the start' : `${reload.result} at ${clock(reload.at)}`,
      'reload',
    ],
  ]);
  byId('policy-figures')
    .querySelector('[data-figure="reload"]')
    ?.classList.toggle('reload-rejected', reload?.result === 'rejected');
  byId('policy-rules').replaceChildren(
    ...snapshot.rules.map((rule) =>
      h(
        'li',
        {},
        h('strong', {}, rule.name),
        rule.mode === 'shadow' ? h('span', { class: 'mode-shadow' }, ' shadow') : '',
        ` — key [${rule.key.join(', ')}]: `,
        rule.limits.map((l) => l.text).join('; '),
      ),
    ),
  );
}
