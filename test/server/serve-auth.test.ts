/**
 * Bearer tokens and scopes of the decision API, the loopback-only rule without tokens, a clean
 * stop on SIGTERM, and `sluice serve` on the example policy (what `npm start` runs).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { runSluice, policyFile } from './cli-support.js';
import { startSluice, type RunningSluice } from './serve-support.js';

const DECIDE = 'decide-token-0123456789';
const ADMIN = 'admin-token-0123456789';
const policy = `version: 1
auth:
  tokens:
    - { token: "\${DECIDE_TOKEN}", scopes: [decide] }
    - { token: "${ADMIN}", scopes: [decide, admin] }
rules:
  - { name: api, algorithm: token-bucket, limit: 5, period: 1m }
`;
const item = { items: [{ rule: 'api', key: 'k' }] };
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe('sluice serve: tokens and scopes', () => {
  let sluice: RunningSluice;
  before(async () => {
    sluice = await startSluice(policy, ['--host', '0.0.0.0'], { DECIDE_TOKEN: DECIDE });
  });
  after(async () => {
    await sluice.stop();
  });

  it('listens on a non-loopback host when the policy has tokens', () => {
    assert.match(sluice.url, /^http:\/\/0\.0\.0\.0:\d+$/);
  });

  it('no token, or one the policy does not hold: 401 with WWW-Authenticate', async () => {
    for (const headers of [{}, bearer('wrong-token-0123456789'), { authorization: `Basic ${ADMIN}` }]) {
      const reply = await sluice.post('/v1/decisions', item, headers);
      assert.equal(reply.status, 401);
      assert.equal(reply.body.code, 'unauthorized');
      assert.equal(reply.headers.get('www-authenticate'), 'Bearer');
    }
  });

  it('decide: decisions and peek; admin: reset and forget too', async () => {
    assert.equal((await sluice.post('/v1/decisions', item, bearer(DECIDE))).status, 200);
    assert.equal((await sluice.post('/v1/peek', item, bearer(DECIDE))).status, 200);
    for (const [path, body] of [
      ['/v1/reset', item],
      ['/v1/forget', { items: [{ key: 'k' }] }],
    ] as const) {
      const refused = await sluice.post(path, body, bearer(DECIDE));
      assert.equal(refused.status, 403);
      assert.equal(refused.body.code, 'insufficient_scope');
      assert.equal((await sluice.post(path, body, bearer(ADMIN))).status, 200);
    }
  });

  it('health needs no token', async () => {
    assert.equal((await sluice.get('/healthz')).status, 200);
    assert.equal((await sluice.get('/readyz')).status, 200);
  });

  it('the start-up text shows a curl line with the token variable, never a token', () => {
    assert.match(
      sluice.output(),
      /curl -s http:\/\/0\.0\.0\.0:\d+\/v1\/decisions .*authorization: Bearer \$SLUICE_TOKEN/,
    );
    assert.ok(!sluice.output().includes(DECIDE) && !sluice.output().includes(ADMIN));
  });
});

describe('sluice serve: without tokens', () => {
  it('refuses to listen on a non-loopback host, and says why', async () => {
    const file = policyFile('version: 1\nrules: []\n');
    const result = await runSluice(['serve', '--config', file, '--host', '0.0.0.0', '--port', '0']);
    assert.equal(result.code, 1);
    assert.equal(
      result.stderr,
      'sluice serve: the policy has no auth tokens, so the server listens on loopback only (127.0.0.1, ::1, localhost), not on 0.0.0.0; add auth.tokens to the policy to listen there\n',
    );
  });

  it('a policy with errors does not start: file:line:column lines, exit 1', async () => {
    const file = policyFile(
      'version: 1\nrules:\n  - { name: a, algorithm: token-bucket, limit: 0, period: 1m }\n',
    );
    const result = await runSluice(['serve', '--config', file, '--port', '0']);
    assert.equal(result.code, 1);
    assert.equal(result.stderr, `${file}:3:48: rules[0].limit must be at least 1\n`);
  });

  it('npm start serves the example policy with the CLI', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    assert.equal(
      pkg.scripts.start,
      'node --import tsx src/server/bin.ts serve --config sluice.example.yaml --echo-upstream',
    );
    assert.equal(pkg.bin.sluice, './bin/sluice.js');
  });

  it('serves the example policy on loopback, says so and how to try it, and stops cleanly on SIGTERM', async () => {
    const sluice = await startSluice(
      readFileSync(new URL('../../sluice.example.yaml', import.meta.url), 'utf8'),
    );
    try {
      assert.match(
        sluice.output(),
        /^sluice: serving \S+ \(11 rules, memory store\) on http:\/\/127\.0\.0\.1:\d+\n/,
      );
      assert.match(sluice.output(), /listening on loopback only, without authentication/);
      // Keys without a secret stay in this process's memory: nothing to warn about.
      assert.doesNotMatch(sluice.output(), /pseudonymSecret/);
      const curl = /curl -s (\S+) -H 'content-type: application\/json' -d '(.*)'\n/.exec(sluice.output());
      assert.ok(curl !== null);
      const reply = await sluice.post(new URL(curl[1]!).pathname, curl[2]!);
      assert.equal(reply.status, 200);
      // The first rule of the example policy with a plain path.
      assert.deepEqual(reply.body.results[0].rules, ['registration']);
      // The README's quick start: the same login item eleven times, ten 200s then a 429.
      const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
      const quick = readme.slice(readme.indexOf('## Quick start'), readme.indexOf('## In a web framework'));
      assert.deepEqual(/```sh\n([^`]*)```/.exec(quick)?.[1]?.trim().split('\n'), [
        'npm ci && npm start',
        'npm test',
      ]);
      const tried = /-d '(\{"items".*\})'/.exec(quick)![1]!;
      const statuses: number[] = [];
      for (let i = 0; i < 11; i++)
        statuses.push((await sluice.post('/v1/decisions', tried)).body.results[0].status);
      assert.deepEqual(statuses, [...Array<number>(10).fill(200), 429]);
    } finally {
      assert.equal(await sluice.stop(), 0);
    }
  });
});
