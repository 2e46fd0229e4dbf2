import type { RuleView } from '../snapshot-types.js';
import { byId, h } from './dom.js';
import { retry } from './format.js';
import { actionButtons } from './render.js';

/** Key parts an operator types; the others are the same for every request of the rule. */
const TYPED = (part: string) =>
  part === 'address' || part === 'host' || part === 'method' || part === 'path' || part.startsWith('header:');

interface Answer {
  id: string;
  mode: string;
  limits: { name: string; allowed: boolean; remaining: number; limit: number; retryAfterMs: number | null }[];
}

/** The bucket inspector's form: a field per part of the chosen rule's key. */
export class Inspector {
  private rules: readonly RuleView[] = [];
  private readonly select = byId<HTMLSelectElement>('inspect-rule');
  private readonly parts = byId('inspect-parts');
  private readonly result = byId('inspect-result');

  constructor() {
    this.select.addEventListener('change', () => this.fields());
    byId<HTMLFormElement>('inspect-form').addEventListener('submit', (event) => {
      event.preventDefault();
      void this.peek();
    });
  }

  /** Follows the policy's rules; the form is rebuilt only when they change. */
  update(rules: readonly RuleView[]): void {
    const names = rules.map((r) => `${r.name}[${r.key.join(',')}]`).join(' ');
    if (names === this.rules.map((r) => `${r.name}[${r.key.join(',')}]`).join(' ')) return;
    const chosen = this.select.value;
    this.rules = rules;
    this.select.replaceChildren(...rules.map((r) => h('option', { value: r.name }, r.name)));
    if (rules.some((r) => r.name === chosen)) this.select.value = chosen;
    this.fields();
  }

  private fields(): void {
    const rule = this.rules.find((r) => r.name === this.select.value);
    this.parts.replaceChildren(
      ...(rule?.key ?? []).map((part, i) =>
        TYPED(part)
          ? h(
              'label',
              {},
              part,
              h('input', {
                name: part,
                id: `part-${i}`,
                autocomplete: 'off',
                spellcheck: 'false',
                ...(part === 'address' ? { placeholder: 'an IP address', required: '' } : {}),
              }),
            )
          : h('span', { class: 'muted' }, `${part}: the same for every request`),
      ),
    );
  }

  private async peek(): Promise<void> {
    const parts: Record<string, string> = {};
    this.parts.querySelectorAll('input').forEach((input) => (parts[input.name] = input.value));
    this.result.replaceChildren(h('p', { class: 'muted' }, 'peeking…'));
    try {
      const response = await fetch('/dashboard/inspect', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ rule: this.select.value, parts }),
      });
      const body = (await response.json()) as Answer & { detail?: string };
      if (!response.ok) {
        this.result.replaceChildren(h('p', { class: 'error' }, body.detail ?? `error ${response.status}`));
        return;
      }
      this.show(body);
    } catch {
      this.result.replaceChildren(h('p', { class: 'error' }, 'The server did not answer.'));
    }
  }

  private show(answer: Answer): void {
    const shadow = answer.mode === 'shadow';
    const rule = this.rules.find((r) => r.name === this.select.value);
    this.result.replaceChildren(
      h(
        'p',
        {},
        'Bucket ',
        h('code', { 'data-inspected-id': '' }, answer.id),
        ' ',
        ...(rule === undefined ? [] : actionButtons(rule, answer.id)),
      ),
      h(
        'ul',
        { class: 'plain' },
        ...answer.limits.map((l) =>
          h(
            'li',
            { 'data-limit': l.name, 'data-remaining': String(l.remaining) },
            `${l.name}: ${l.remaining} of ${l.limit} left; `,
            l.allowed
              ? 'the next request is admitted'
              : `${shadow ? 'the next request would be refused (shadow)' : 'the next request is refused'}, retry after ${retry(l.retryAfterMs)}`,
          ),
        ),
      ),
    );
  }
}
