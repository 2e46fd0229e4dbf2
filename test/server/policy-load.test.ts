/** A valid policy loads into the model with every default written out, and prints without secrets. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { loadPolicyText } from '../../src/server/policy/load.js';
import { AnchoredWindowRule } from '../../src/index.js';
import { SECRET, compiled, issuesOf, loginPolicy } from './policy-support.js';

/** What a rule that says nothing of them gets. */
const enforced = {
  match: {},
  cost: 1,
  failure: 'closed',
  headers: 'draft',
  mode: 'enforce',
  allow: [],
  deny: [],
  response: { status: 429 },
};

describe('policy loading', () => {
  it('fills in every default: store, clients, failure, headers, mode, key, cost, burst, per, limit names', () => {
    const { policy } = loadPolicyText(
      loginPolicy(`  - name: daily
    key: [header:x-api-key]
    limits:
      - { algorithm: calendar-quota, limit: 100 }
      - { algorithm: sliding-window, limit: 10, window: 1m, name: daily-minute }
      - { algorithm: fixed-window, limit: 5, window: 1s }
  - { name: try-out, mode: shadow, algorithm: fixed-window, limit: 1, window: 1m }
`),
      { env: {} },
    );
    assert.deepEqual(JSON.parse(JSON.stringify(policy)), {
      version: 1,
      store: { type: 'memory' },
      clients: { trustedProxies: ['loopback'], proxyHeader: 'x-forwarded-for', ipv6Prefix: 64, secrets: [] },
      defaults: { failure: 'closed', headers: 'draft', mode: 'enforce' },
      tokens: [],
      hosts: [],
      upstreams: [],
      server: { admin: 'main' },
      allow: [],
      deny: [],
      rules: [
        {
          ...enforced,
          name: 'login',
          key: ['address'],
          limits: [{ name: 'login', algorithm: 'token-bucket', limit: 10, period: '10m', burst: 10 }],
        },
        {
          ...enforced,
          name: 'daily',
          key: ['header:x-api-key'],
          limits: [
            { name: 'daily', algorithm: 'calendar-quota', limit: 100, per: 'day' },
            { name: 'daily-minute', algorithm: 'sliding-window', limit: 10, window: '1m' },
            { name: 'daily:3', algorithm: 'fixed-window', limit: 5, window: '1s' },
          ],
        },
        {
          ...enforced,
          name: 'try-out',
          key: ['address'],
          failure: 'open',
          mode: 'shadow',
          limits: [{ name: 'try-out', algorithm: 'fixed-window', limit: 1, window: '1m' }],
        },
      ],
    });
  });

  it('accepts an anchored window, builds it as the library does, and names its options in errors', () => {
    const text = loginPolicy(`  - name: reset
    algorithm: anchored-window
    limit: 5
    window: 15m
    penalty: true
    block: { duration: 1h }
`);
    const { policy } = loadPolicyText(text, { env: {} });
    assert.deepEqual(JSON.parse(JSON.stringify(policy.rules[1]?.limits)), [
      {
        name: 'reset',
        algorithm: 'anchored-window',
        limit: 5,
        window: '15m',
        penalty: true,
        block: { duration: '1h' },
      },
    ]);
    const built = compiled(text);
    try {
      const rule = built.rule('reset')?.limiters[0]?.rule;
      assert.ok(rule instanceof AnchoredWindowRule);
      assert.deepEqual([rule.periodMs, rule.limit, rule.penalty], [900_000, 5, true]);
    } finally {
      built.close();
    }
    assert.deepEqual(issuesOf(text.replace('window: 15m', 'window: 15 minutes')), [
      '10:13: rules[1].window must be a duration such as "10m": a whole number with ms, s, m, h or d',
    ]);
    assert.deepEqual(issuesOf(text.replace('    window: 15m\n', '')), ['7:5: rules[1] needs "window"']);
  });

  it('prints values read from the environment as written and hides secrets written in the file', () => {
    const loaded = loadPolicyText(
      `version: 1
store: { type: redis, url: "\${REDIS_URL}" }
clients: { pseudonymSecret: "${SECRET}", previousSecrets: ["\${OLD_SECRET}"] }
auth:
  tokens:
    - { token: "\${TOKEN}", scopes: [decide] }
    - { token: "a-token-written-in-the-file", scopes: [admin] }
rules: []
`,
      {
        env: { REDIS_URL: 'redis://:hunter2@cache:6379', OLD_SECRET: 'x'.repeat(40), TOKEN: 'y'.repeat(20) },
      },
    );
    assert.equal(
      loaded.policy.store.type === 'redis' && loaded.policy.store.url,
      'redis://:hunter2@cache:6379',
    );
    const shown = JSON.stringify(loaded.printable());
    for (const secret of ['hunter2', SECRET, 'x'.repeat(40), 'y'.repeat(20), 'a-token-written-in-the-file'])
      assert.ok(!shown.includes(secret), 'a secret is printed');
    const printed = loaded.printable();
    assert.deepEqual(printed.store, { type: 'redis', url: '${REDIS_URL}' });
    assert.deepEqual(printed.clients.secrets, ['<hidden>', '${OLD_SECRET}']);
    assert.deepEqual(
      printed.tokens.map((t) => t.token),
      ['${TOKEN}', '<hidden>'],
    );
  });

  it('hides a password written in a store URL', () => {
    const loaded = loadPolicyText(
      'version: 1\nstore: { type: postgres, url: "postgres://app:s3cret@db/test" }\nrules: []\n',
    );
    assert.deepEqual(loaded.printable().store, { type: 'postgres', url: 'postgres://app:<hidden>@db/test' });
  });
});
