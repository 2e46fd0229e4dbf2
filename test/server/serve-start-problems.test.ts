/**
 * What `sluice serve` says when it cannot start as asked, each in one line of words: a port in
 * use, a database that does not exist, a Redis that is not running (it starts, and says so);
 * and the curl line it prints at start asks the loaded policy's own rule.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { runSluice, policyFile } from './cli-support.js';
import { startSluice } from './serve-support.js';
import { closedPort, postgresUrl, runId, skipUnlessReachable } from '../support/services.js';

const rules = `rules:
  - name: upload
    match: { methods: [PUT], paths: [/v2/upload/**, /v2/upload], headers: { x-tenant: '*' } }
    key: [address, header:x-user]
    algorithm: fixed-window
    limit: 3
    window: 1m
`;

describe('sluice serve: start-up problems in words', () => {
  const held: Server[] = [];
  after(() => held.forEach((server) => server.close()));

  it('a port in use is one line saying so, exit 1', async () => {
    const server = createServer();
    held.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    const result = await runSluice([
      'serve',
      '--config',
      policyFile(`version: 1\n${rules}`),
      '--port',
      String(port),
    ]);
    assert.equal(result.code, 1);
    assert.equal(
      result.stderr,
      `sluice serve: cannot listen on 127.0.0.1:${port} (EADDRINUSE): the port is in use by another process (a sluice server already running?); stop it, or choose another port with --port\n`,
    );
  });

  it('a PostgreSQL database that does not exist stops the start, saying so', async (t) => {
    const skip = await skipUnlessReachable('PostgreSQL', postgresUrl);
    if (skip) return t.skip(skip);
    const url = new URL(postgresUrl);
    url.password = 'never-said-0123';
    url.pathname = `/sluice_missing_${runId}`;
    const policy = policyFile(`version: 1\nstore: { type: postgres, url: "\${DATABASE_URL}" }\n${rules}`);
    const result = await runSluice(['serve', '--config', policy, '--port', '0'], { DATABASE_URL: url.href });
    assert.equal(result.code, 1);
    assert.equal(
      result.stderr,
      'sluice serve: the postgres store cannot be used: PostgreSQL store unavailable: the database does not exist (SQLSTATE 3D000): create it, or correct the database name of the connection settings\n',
    );
    assert.doesNotMatch(result.stdout + result.stderr, /never-said|sluice_missing/);
  });

  it('a Redis that is not running: the server starts and says why the store did not answer', async () => {
    const port = await closedPort();
    const sluice = await startSluice(
      `version: 1\nstore: { type: redis, url: "redis://127.0.0.1:${port}" }\n${rules}`,
    );
    try {
      assert.match(
        sluice.output(),
        /^sluice: warning: the redis store did not answer at start; each rule's failure policy answers until it does, and \/readyz says unavailable\. Redis unavailable: connection refused \(code ECONNREFUSED\): nothing listens at the host and port of the connection settings; is the server running there\?$/m,
      );
      assert.deepEqual((await sluice.get('/readyz')).body, { status: 'unavailable', store: 'redis' });
    } finally {
      assert.equal(await sluice.stop(), 0);
    }
  });

  it("the start-up curl line asks the loaded policy's own rule", async () => {
    const sluice = await startSluice(`version: 1\n${rules}`);
    try {
      const curl = /curl -s (\S+) -H 'content-type: application\/json' -d '(.*)'\n/.exec(sluice.output());
      assert.ok(curl !== null, sluice.output());
      const body = JSON.parse(curl[2]!);
      assert.deepEqual(body.items[0].request, {
        method: 'PUT',
        path: '/v2/upload',
        address: '203.0.113.7',
        headers: { 'x-tenant': 'example', 'x-user': 'example' },
      });
      const reply = await sluice.post(new URL(curl[1]!).pathname, body);
      assert.deepEqual(reply.body.results[0].rules, ['upload']);
      assert.equal(reply.body.results[0].status, 200);
    } finally {
      assert.equal(await sluice.stop(), 0);
    }
  });
});
