/**
 * `sluice top` (the CLI as a child process) against a running `sluice serve`: its tables carry
 * the numbers of the traffic sent, bucket ids and no address; the admin token from SLUICE_ADMIN_TOKEN (else SLUICE_TOKEN);
 * bad arguments and an unreachable server are clear errors.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { runSluice } from '../cli-support.js';
import { fromAddress, startSluice, type RunningSluice } from '../serve-support.js';
import { readFeed, totalOf } from './sse-support.js';

const OFFENDER = '203.0.113.41';
const ADMIN = 'admin-token-top-0123456789';
const DECIDER = 'decide-token-top-0123456789';
const rules = `rules:
  - name: login
    match: { methods: [POST], paths: [/api/login] }
    key: [address]
    algorithm: fixed-window
    limit: 2
    window: 1h
  - name: trial
    key: [address]
    algorithm: fixed-window
    limit: 1
    window: 1h
    mode: shadow
`;

async function traffic(sluice: RunningSluice, headers: Record<string, string> = {}) {
  for (let i = 0; i < 5; i++) await sluice.post('/v1/decisions', { items: [fromAddress(OFFENDER)] }, headers);
  await readFeed(sluice.url, (s) => totalOf(s, 'login', 'refused') === 3, headers);
}

/** A loopback port that was free a moment ago (nothing listens on it now). */
async function freedPort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('sluice top', () => {
  let open: RunningSluice;
  let guarded: RunningSluice;
  before(async () => {
    [open, guarded] = await Promise.all([
      startSluice(`version: 1\n${rules}`),
      startSluice(
        `version: 1\nauth:\n  tokens:\n    - { token: "${DECIDER}", scopes: [decide] }\n    - { token: "${ADMIN}", scopes: [decide, admin] }\n${rules}`,
      ),
    ]);
    guarded.sensitive(ADMIN);
    guarded.sensitive(DECIDER);
    await traffic(open);
    await traffic(guarded, { authorization: `Bearer ${ADMIN}` });
  });
  after(async () => {
    await Promise.all([open.stop(), guarded.stop()]);
  });

  it('prints a table per snapshot: rules with their totals, the heaviest refused id, recent refusals', async () => {
    const run = await runSluice(['top', '--url', open.url, '--iterations', '2']);
    assert.equal(run.code, 0, run.stderr);
    const tables = run.stdout.split(/^sluice top /m).filter(Boolean);
    assert.equal(tables.length, 2);
    const last = tables[1]!;
    assert.match(last, /^login\s.*\s2\/3\/0$/m);
    // The first refusal stops: trial was asked only for the two requests login admitted.
    assert.match(last, /^trial \(shadow\)\s.*\s1\/0\/1$/m);
    assert.match(last, /TOP OFFENDERS/);
    assert.match(last, /^ {2}login\s+refused\s+fp:[\w-]{22}\s+3$/m);
    assert.match(last, /^ {2}trial\s+shadow\s+fp:[\w-]{22}\s+1$/m);
    assert.match(last, /RECENT REFUSALS/);
    assert.ok(!run.stdout.includes(OFFENDER));
  });

  it('reads the admin token of SLUICE_ADMIN_TOKEN (SLUICE_TOKEN when it is unset), and says which it needs', async () => {
    const top = (env: Record<string, string>) =>
      runSluice(['top', '--url', guarded.url, '--iterations', '1'], env);
    const without = await top({});
    assert.equal(without.code, 2);
    assert.match(without.stderr, /wants an admin token: set SLUICE_ADMIN_TOKEN/);
    const wrong = await top({ SLUICE_ADMIN_TOKEN: 'not-a-token-0123456789' });
    assert.equal(wrong.code, 2);
    assert.ok(!wrong.stderr.includes('not-a-token-0123456789'));
    // The example policy's SLUICE_TOKEN is the decide-only token: the feed refuses it.
    const decider = await top({ SLUICE_TOKEN: DECIDER });
    assert.equal(decider.code, 2);
    assert.match(
      decider.stderr,
      /refused \(403\): the token of SLUICE_TOKEN lacks the admin scope .*set SLUICE_ADMIN_TOKEN to a token with the admin scope/,
    );
    assert.ok(!decider.stderr.includes(DECIDER));
    const envs: Record<string, string>[] = [
      { SLUICE_ADMIN_TOKEN: ADMIN, SLUICE_TOKEN: DECIDER },
      { SLUICE_TOKEN: ADMIN },
    ];
    for (const env of envs) {
      const run = await top(env);
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stdout, /^login\s.*\s2\/3\/0$/m);
    }
  });

  it('refuses bad arguments and reports a server it cannot reach', async () => {
    for (const [args, says] of [
      [['--iterations', '0'], /a whole number of at least 1/],
      [['--iterations', 'many'], /a whole number of at least 1/],
      [['--url', 'ftp://example.invalid/'], /an http:\/\/ or https:\/\/ URL/],
      [['--url', 'not a url'], /a URL, as http:\/\/127\.0\.0\.1:8411/],
    ] as const) {
      const run = await runSluice(['top', ...args]);
      assert.equal(run.code, 1, args.join(' '));
      assert.match(run.stderr, says);
    }
    const down = await runSluice([
      'top',
      '--url',
      `http://127.0.0.1:${await freedPort()}`,
      '--iterations',
      '1',
    ]);
    assert.equal(down.code, 2);
    assert.match(down.stderr, /cannot read the server at --url \(ECONNREFUSED\)/);
    const help = await runSluice(['top', '--help']);
    assert.equal(help.code, 0);
    for (const option of ['--url', '--iterations', 'SLUICE_ADMIN_TOKEN', 'http://127.0.0.1:8412'])
      assert.ok(help.stdout.includes(option), option);
  });
});
