/**
 * `sluice serve` in operation, the real CLI as a child process over real HTTP: /metrics
 * (bounded labels, never a request value), the JSON log, hot reload on SIGHUP and on a change
 * of the file (unchanged rules keep their buckets, an invalid file keeps the policy served and
 * logs each error at its line), and the store's failures counted per failure policy.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DECISION_OUTCOMES } from '../../src/limiter/events.js';
import { logOf, metricsOf, replacePolicy, valueOf, waitForLog } from './ops-support.js';
import { mkdirSync, mkdtempSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fromAddress, startSluice, startSluiceAt, type RunningSluice } from './serve-support.js';

const rules = (searchLimit: number, extra = '') => `version: 1
rules:
  - name: login
    match: { methods: [POST], paths: [/api/login] }
    key: [address]
    deny: [198.51.100.0/24]
    algorithm: token-bucket
    limit: 2
    period: 1h
  - name: search
    match: { paths: [/api/search] }
    key: [header:x-user]
    limits:
      - { algorithm: fixed-window, limit: ${searchLimit}, window: 1h }
      - { algorithm: token-bucket, limit: 50, period: 1d, name: search-day }
${extra}`;

const search = (user: string) => fromAddress('203.0.113.50', 'GET', '/api/search', { 'x-user': user });

describe('sluice serve: metrics and log', () => {
  let sluice: RunningSluice;
  before(async () => {
    sluice = await startSluice(rules(5));
  });
  after(async () => {
    await sluice.stop();
  });

  it('counts decisions by rule, limit and outcome, with labels from the policy only', async () => {
    const items = [
      fromAddress('203.0.113.7'),
      fromAddress('203.0.113.7'),
      fromAddress('203.0.113.7'),
      fromAddress('198.51.100.4'),
      search('user-ann-42'),
    ];
    const reply = await sluice.post('/v1/decisions', { items });
    assert.deepEqual(
      reply.body.results.map((r: { status: number }) => r.status),
      [200, 200, 429, 403, 200],
    );
    const { contentType, samples, text } = await metricsOf(sluice);
    assert.match(contentType, /^text\/plain; version=0\.0\.4/);
    const decisions = (labels: Record<string, string>) => valueOf(samples, 'sluice_decisions_total', labels);
    assert.equal(decisions({ rule: 'login', limit: 'login', outcome: 'admitted' }), 2);
    assert.equal(decisions({ rule: 'login', limit: 'login', outcome: 'refused' }), 1);
    assert.equal(decisions({ rule: 'login', limit: '-', outcome: 'denied' }), 1);
    assert.equal(decisions({ rule: 'search', limit: 'search', outcome: 'admitted' }), 1);
    assert.equal(decisions({ rule: 'search', limit: 'search-day', outcome: 'admitted' }), 1);
    assert.equal(valueOf(samples, 'sluice_admitted_units_total', { rule: 'login', limit: 'login' }), 2);
    assert.ok(valueOf(samples, 'sluice_store_latency_seconds_count', { store: 'memory' }) >= 4);
    assert.equal(valueOf(samples, 'sluice_policy_rules'), 2);

    // Every label of every sluice series is configuration or a closed set.
    const allowed: Record<string, Set<string>> = {
      rule: new Set(['login', 'search']),
      limit: new Set(['login', 'search', 'search-day', '-']),
      outcome: new Set(DECISION_OUTCOMES),
      store: new Set(['memory']),
      result: new Set(['applied', 'rejected']),
      policy: new Set(['open', 'closed', 'insurance']),
    };
    for (const sample of samples.filter((s) =>
      /^sluice_(decisions|admitted|failure|store|policy_r)/.test(s.name),
    ))
      for (const [name, value] of Object.entries(sample.labels))
        if (name !== 'le') assert.ok(allowed[name]?.has(value), `${sample.name} ${name}="${value}"`);
    for (const value of ['203.0.113.7', '198.51.100.4', 'user-ann-42', '/api/search'])
      assert.ok(!text.includes(value), `/metrics shows ${value}`);
  });

  it('logs JSON lines: the start with the policy in numbers, never a request', async () => {
    const [start] = await waitForLog(sluice, 'start');
    assert.equal(start!.level, 'info');
    assert.equal(start!.rules, 2);
    assert.equal(start!.store, 'memory');
    assert.equal(typeof start!.time, 'string');
    // Only the human start-up lines (first) are not JSON.
    const lines = sluice
      .output()
      .split('\n')
      .filter((l) => l !== '');
    const firstJson = lines.findIndex((l) => l.startsWith('{'));
    assert.ok(firstJson > 0);
    assert.ok(
      lines.slice(firstJson).every((l) => l.startsWith('{')),
      sluice.output(),
    );
  });

  it('/metrics answers GET and HEAD only', async () => {
    const reply = await sluice.post('/metrics', {});
    assert.equal(reply.status, 405);
    assert.equal(reply.headers.get('allow'), 'GET, HEAD');
  });
});

describe('sluice serve: hot reload', () => {
  let sluice: RunningSluice;
  before(async () => {
    sluice = await startSluice(rules(5));
  });
  after(async () => {
    await sluice.stop();
  });

  const statuses = async (...items: unknown[]) =>
    (await sluice.post('/v1/decisions', { items })).body.results.map(
      (r: { status: number; remaining: number }) => [r.status, r.remaining],
    );

  it('on SIGHUP: a changed rule starts afresh with its new limits, an unchanged one keeps its buckets', async () => {
    // login: 1 of 2 left; search: 3 of 5 left.
    assert.deepEqual(await statuses(fromAddress('203.0.113.8'), search('bo'), search('bo')), [
      [200, 1],
      [200, 4],
      [200, 3],
    ]);
    replacePolicy(sluice.config, rules(7));
    await waitForLog(sluice, 'reload', 1);
    sluice.child.kill('SIGHUP');
    const reloads = await waitForLog(sluice, 'reload', 2);
    assert.deepEqual(
      reloads.map((r) => r.trigger),
      ['file', 'signal'],
    );
    // The unchanged rule's two limits stayed on both reloads.
    assert.equal(reloads[1]!.keptLimits, 3);
    assert.equal(reloads[0]!.keptLimits, 1);
    assert.deepEqual(await statuses(fromAddress('203.0.113.8'), fromAddress('203.0.113.8'), search('bo')), [
      [200, 0],
      [429, 0],
      // A fresh window of 7, and a fresh day (its limits were rebuilt as one rule).
      [200, 6],
    ]);
    const { samples } = await metricsOf(sluice);
    assert.equal(valueOf(samples, 'sluice_policy_reloads_total', { result: 'applied' }), 2);
    assert.equal(valueOf(samples, 'sluice_policy_reloads_total', { result: 'rejected' }), 0);
  });

  it('a rule added and a rule removed by a reload', async () => {
    const added = `  - name: export\n    match: { paths: [/export] }\n    algorithm: fixed-window\n    limit: 1\n    window: 1h\n`;
    replacePolicy(sluice.config, rules(7, added));
    await waitForLog(sluice, 'reload', 3);
    const exported = fromAddress('203.0.113.9', 'GET', '/export');
    assert.deepEqual(await statuses(exported, exported), [
      [200, 0],
      [429, 0],
    ]);
    replacePolicy(sluice.config, rules(7));
    await waitForLog(sluice, 'reload', 4);
    const reply = await sluice.post('/v1/decisions', { items: [{ rule: 'export', key: 'k-1' }] });
    assert.equal(reply.status, 400);
    assert.deepEqual(await statuses(exported), [[200, null]]);
  });

  it('an invalid file keeps the policy served and logs every error at its line', async () => {
    const before = await statuses(search('cy'));
    const broken = rules(7).replace('limit: 2\n', 'limit: -2\n').replace('window: 1h }', 'window: 1 }');
    replacePolicy(sluice.config, broken);
    const [rejected] = await waitForLog(sluice, 'reload-rejected', 1);
    assert.equal(rejected!.level, 'error');
    assert.equal(rejected!.issues, 2);
    const errors = logOf(sluice).filter((e) => e.event === 'policy-error');
    assert.deepEqual(
      errors.map((e) => [e.line, e.column]),
      [
        [8, 12],
        [14, 54],
      ],
    );
    assert.match(errors[0]!.msg, /rules\[0\]\.limit must be at least 1/);
    assert.match(errors[1]!.msg, /rules\[1\]\.limits\[0\]\.window must be a duration string/);
    // Still the policy before: search's window of 7 goes on counting.
    assert.deepEqual(before, [[200, 6]]);
    assert.deepEqual(await statuses(search('cy')), [[200, 5]]);
    const { samples } = await metricsOf(sluice);
    assert.equal(valueOf(samples, 'sluice_policy_reloads_total', { result: 'rejected' }), 1);
  });

  it('a reload that names another store is refused: the store is opened once, at start', async () => {
    replacePolicy(
      sluice.config,
      rules(7).replace('version: 1\n', 'version: 1\nstore: { type: redis, url: "redis://127.0.0.1:1" }\n'),
    );
    await waitForLog(sluice, 'reload-rejected', 2);
    const last = logOf(sluice)
      .filter((e) => e.event === 'policy-error')
      .at(-1)!;
    assert.equal(last.line, 2);
    assert.match(last.msg, /store cannot change while the server runs/);
    assert.deepEqual(await statuses(search('cy')), [[200, 4]]);
  });
});

describe('sluice serve: reloads in other settings', () => {
  it('a policy mounted as a Kubernetes ConfigMap: a swap of its folder of links is a change of the file', async () => {
    // dir/sluice.yaml -> ..data/sluice.yaml, ..data -> a folder of the version: an update
    // writes a new folder and renames a new ..data link over the old one.
    const dir = mkdtempSync(join(tmpdir(), 'sluice-configmap-'));
    const version = (name: string, text: string) => {
      mkdirSync(join(dir, name));
      writeFileSync(join(dir, name, 'sluice.yaml'), text);
      symlinkSync(name, join(dir, '..data_tmp'));
      renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    };
    version('..v1', rules(5));
    symlinkSync('..data/sluice.yaml', join(dir, 'sluice.yaml'));
    const sluice = await startSluiceAt(join(dir, 'sluice.yaml'));
    try {
      version('..v2', rules(9));
      await waitForLog(sluice, 'reload');
      const reply = await sluice.post('/v1/decisions', { items: [search('dee')] });
      assert.equal(reply.body.results[0].decisions[0].limit, 9);
    } finally {
      assert.equal(await sluice.stop(), 0);
    }
  });

  it('a server listening beyond loopback refuses a reload without tokens', async () => {
    const token = 'decide-token-0123456789';
    const withTokens = `${rules(5)}auth:\n  tokens:\n    - { token: "\${TOKEN}", scopes: [decide] }\n`;
    const sluice = await startSluice(withTokens, ['--host', '0.0.0.0'], { TOKEN: token });
    try {
      replacePolicy(sluice.config, rules(5));
      const [rejected] = await waitForLog(sluice, 'reload-rejected');
      assert.equal(rejected!.issues, 1);
      const error = logOf(sluice).find((e) => e.event === 'policy-error')!;
      assert.match(error.msg, /has no auth tokens, but the server listens beyond loopback/);
      const url = sluice.url.replace('0.0.0.0', '127.0.0.1');
      const body = JSON.stringify({ items: [search('eve')] });
      const post = (headers: Record<string, string>) =>
        fetch(`${url}/v1/decisions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body,
        });
      assert.equal((await post({})).status, 401);
      assert.equal((await post({ authorization: `Bearer ${token}` })).status, 200);
      sluice.sensitive('eve');
    } finally {
      assert.equal(await sluice.stop(), 0);
    }
  });
});

describe('sluice serve: store failures', () => {
  let sluice: RunningSluice;
  before(async () => {
    // Nothing listens on port 1: every decision's store call fails at once.
    sluice = await startSluice(`version: 1
store: { type: redis, url: "redis://127.0.0.1:1", timeout: 200ms }
rules:
  - { name: comfort, failure: open, match: { paths: [/feed] }, algorithm: fixed-window, limit: 5, window: 1m }
  - { name: guarded, match: { paths: [/login] }, algorithm: fixed-window, limit: 5, window: 1m }
`);
  });
  after(async () => {
    await sluice.stop();
  });

  it('counts each failure policy that decided, and logs the failure without the request', async () => {
    const reply = await sluice.post('/v1/decisions', {
      items: [
        fromAddress('203.0.113.60', 'GET', '/feed'),
        fromAddress('203.0.113.60', 'GET', '/feed'),
        fromAddress('203.0.113.61', 'POST', '/login'),
      ],
    });
    assert.deepEqual(
      reply.body.results.map((r: { status: number }) => r.status),
      [200, 200, 503],
    );
    const { samples } = await metricsOf(sluice);
    const activations = (rule: string, policy: string) =>
      valueOf(samples, 'sluice_failure_policy_activations_total', { rule, limit: rule, policy });
    assert.equal(activations('comfort', 'open'), 2);
    assert.equal(activations('guarded', 'closed'), 1);
    const failures = await waitForLog(sluice, 'store-failure', 2);
    assert.deepEqual(failures.map((f) => [f.level, f.limit, f.store]).sort(), [
      ['warn', 'comfort', 'redis'],
      ['warn', 'guarded', 'redis'],
    ]);
  });
});
