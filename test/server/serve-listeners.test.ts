/**
 * The server's listeners, with the server in this process and real upstreams on loopback: in
 * gateway mode the server's own paths are on an admin listener, so every path of the application
 * (`/v1/items` too) reaches it; routes by host and path prefix; a TLS main listener; upstream
 * metrics; /readyz that says an upstream is down; `sluice check`'s warning of a gateway rule on
 * a path the server answers itself.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadPolicyText } from '../../src/server/policy/load.js';
import { listenerPlan, tokensRequired } from '../../src/server/serve/listeners.js';
import { createServerLog } from '../../src/server/serve/log.js';
import { serve, StartError, type RunningServer } from '../../src/server/serve/start.js';
import { policyFile, runSluice } from './cli-support.js';
import { answerOf, closedPort, startUpstream, type Upstream } from './gateway-support.js';
import { issuesOf } from './policy-support.js';

/** Starts the server on `text`, both listeners on free ports, its lines kept in `lines`. */
function start(text: string, env: Record<string, string> = {}, lines: string[] = []): Promise<RunningServer> {
  return serve({
    config: policyFile(text),
    host: '127.0.0.1',
    port: 0,
    adminPort: 0,
    env,
    out: (line) => lines.push(line),
    log: createServerLog({ write: () => {} }),
  });
}

interface Answer {
  status: number;
  body: string;
}

/** One GET with node:http (fetch may not set Host), over https when the URL says so. */
function get(url: string, headers: Record<string, string> = {}, ca?: Buffer): Promise<Answer> {
  const options = { headers, agent: false as const, ...(ca === undefined ? {} : { ca }) };
  return answerOf(url.startsWith('https:') ? httpsRequest(url, options) : httpRequest(url, options));
}

/** The value of one series of the Prometheus text, or undefined when it is not there. */
function series(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

describe('sluice serve: the admin listener in gateway mode', () => {
  let upstream: Upstream;
  let server: RunningServer;
  const lines: string[] = [];
  before(async () => {
    upstream = await startUpstream((req, res) => res.end(`app ${req.url}`));
    server = await start(
      `version: 1
upstream: \${UPSTREAM}
rules:
  - { name: items, match: { paths: ["/v1/*"] }, algorithm: fixed-window, limit: 2, window: 1h }
`,
      { UPSTREAM: upstream.url },
      lines,
    );
  });
  after(async () => {
    await server.close();
    await upstream.close();
  });

  it('forwards /v1/items and every other server path of the main listener to the application', async () => {
    assert.notEqual(server.adminUrl, server.url);
    const seen = upstream.seen.length;
    assert.deepEqual(await get(`${server.url}/v1/items`), { status: 200, body: 'app /v1/items' });
    for (const path of ['/healthz', '/metrics', '/openapi.json', '/dashboard'])
      assert.deepEqual(await get(`${server.url}${path}`), { status: 200, body: `app ${path}` });
    assert.equal(upstream.seen.length, seen + 5);
    // The gateway's rule on /v1/* limits the application's /v1/ paths: two in the hour, then 429.
    assert.equal((await get(`${server.url}/v1/other`)).status, 200);
    assert.equal((await get(`${server.url}/v1/items`)).status, 429);
  });

  it('answers /healthz, /readyz, /metrics and /v1/decisions on the admin listener, and says where', async () => {
    assert.deepEqual(JSON.parse((await get(`${server.adminUrl}/healthz`)).body), { status: 'ok' });
    const ready = await get(`${server.adminUrl}/readyz`);
    assert.equal(ready.status, 200);
    assert.deepEqual(JSON.parse(ready.body), {
      status: 'ok',
      store: 'memory',
      upstreams: [{ route: 'upstream', status: 'ok' }],
    });
    const decided = await fetch(`${server.adminUrl}/v1/decisions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ items: [{ rule: 'items', key: 'k' }] }),
    });
    assert.equal(decided.status, 200);
    assert.equal(((await decided.json()) as { results: { status: number }[] }).results[0]!.status, 200);
    assert.equal((await get(`${server.adminUrl}/app-path`)).status, 404);
    const text = lines.join('');
    assert.match(text, new RegExp(`on ${server.url}\\n`));
    assert.match(text, new RegExp(`/dashboard\\) are at ${server.adminUrl}\\n`));
    assert.match(text, new RegExp(`curl -s ${server.adminUrl}/v1/decisions`));
  });

  it('counts what it forwards and times the upstream, by route, on the admin /metrics', async () => {
    const before = (await get(`${server.adminUrl}/metrics`)).body;
    const forwarded = series(before, 'sluice_upstream_forwarded_total{route="upstream"}') ?? 0;
    const timed = series(before, 'sluice_upstream_latency_seconds_count{route="upstream"}') ?? 0;
    assert.equal((await get(`${server.url}/plain`)).status, 200);
    const after = (await get(`${server.adminUrl}/metrics`)).body;
    assert.equal(series(after, 'sluice_upstream_forwarded_total{route="upstream"}'), forwarded + 1);
    assert.equal(series(after, 'sluice_upstream_latency_seconds_count{route="upstream"}'), timed + 1);
  });

  it('reloads a policy that keeps its listeners, and refuses one that would move one', async () => {
    writeFileSync(configOf(lines), `version: 1\nupstream: ${upstream.url}\nrules: []\n`);
    assert.equal(await server.reload('signal'), true);
    // The rule on /v1/* is gone: the application's /v1/items is no longer limited.
    assert.equal((await get(`${server.url}/v1/items`)).status, 200);
    writeFileSync(
      configOf(lines),
      `version: 1\nupstream: ${upstream.url}\nserver: { admin: main }\nrules: []\n`,
    );
    assert.equal(await server.reload('signal'), false);
    assert.equal((await get(`${server.adminUrl}/healthz`)).status, 200);
    assert.equal((await get(`${server.url}/healthz`)).body, 'app /healthz');
  });
});

/** The policy file a server serves, from its first line. */
function configOf(lines: string[]): string {
  return /^sluice: serving (\S+) /.exec(lines.join(''))![1]!;
}

describe('sluice serve: an upstream that is down', () => {
  it('makes /readyz 503 with the reason in words, answers 502, and counts the failure', async () => {
    const port = await closedPort();
    const server = await start('version: 1\nupstream: ${UPSTREAM}\nrules: []\n', {
      UPSTREAM: `http://127.0.0.1:${port}`,
    });
    try {
      assert.equal((await get(`${server.url}/anything`)).status, 502);
      const ready = await get(`${server.adminUrl}/readyz`);
      assert.equal(ready.status, 503);
      assert.deepEqual(JSON.parse(ready.body), {
        status: 'unavailable',
        store: 'memory',
        upstreams: [{ route: 'upstream', status: 'unavailable', reason: 'the upstream refuses connections' }],
      });
      assert.doesNotMatch(ready.body, new RegExp(String(port)));
      const metrics = (await get(`${server.adminUrl}/metrics`)).body;
      assert.equal(series(metrics, 'sluice_upstream_failures_total{route="upstream"}'), 1);
    } finally {
      await server.close();
    }
  });
});

describe('sluice serve: routes by host and path prefix', () => {
  const apps: Upstream[] = [];
  let server: RunningServer;
  before(async () => {
    for (const name of ['site', 'reports', 'api'])
      apps.push(await startUpstream((req, res) => res.end(`${name} ${req.url}`)));
    const [site, reports, api] = apps.map((app) => app.url);
    server = await start(`version: 1
upstreams:
  - { name: site, url: "${site}" }
  - { name: reports, pathPrefix: /Reports/, url: "${reports}" }
  - { name: api, host: API.test, url: "${api}" }
  - { name: api-only, host: api.test, pathPrefix: /only, url: "${api}/base" }
rules: []
`);
  });
  after(async () => {
    await server.close();
    for (const app of apps) await app.close();
  });

  it('takes the longest prefix, a route of the host before one without, and the path unchanged', async () => {
    const at = (path: string, host?: string) =>
      get(`${server.url}${path}`, host === undefined ? {} : { host }).then((a) => a.body);
    assert.equal(await at('/'), 'site /');
    assert.equal(await at('/reports/2026?x=1'), 'reports /reports/2026?x=1');
    assert.equal(await at('/REPORTS'), 'reports /REPORTS');
    assert.equal(await at('/reportsx'), 'site /reportsx');
    assert.equal(await at('/reports/2026', 'api.test:8080'), 'api /reports/2026');
    assert.equal(await at('/only/x', 'api.test'), 'api /base/only/x');
    assert.equal(await at('/only/x', 'other.test'), 'site /only/x');
  });

  it('answers 404 no_route for a request no route takes, and counts it', async () => {
    const apps2 = await startUpstream((_req, res) => res.end('narrow'));
    const narrow = await start(`version: 1
upstreams: [{ name: narrow, pathPrefix: /only, url: "${apps2.url}" }]
rules: []
`);
    try {
      const answer = await get(`${narrow.url}/elsewhere`);
      assert.equal(answer.status, 404);
      assert.equal(JSON.parse(answer.body).code, 'no_route');
      assert.equal(apps2.seen.length, 0);
      const metrics = (await get(`${narrow.adminUrl}/metrics`)).body;
      assert.equal(series(metrics, 'sluice_gateway_unrouted_total'), 1);
    } finally {
      await narrow.close();
      await apps2.close();
    }
  });

  it('refuses upstream beside upstreams, a repeated name, and two routes of one host and prefix', () => {
    assert.deepEqual(
      issuesOf(
        'version: 1\nupstream: http://127.0.0.1:1\nupstreams: [{ name: a, url: "http://127.0.0.1:2" }]\nrules: []\n',
      ),
      ['3:12: upstreams cannot be given with upstream: write that upstream as one more route'],
    );
    assert.deepEqual(
      issuesOf(`version: 1
upstreams:
  - { name: a, url: "http://127.0.0.1:2", pathPrefix: /x }
  - { name: a, url: "http://127.0.0.1:3", pathPrefix: /X/ }
rules: []
`),
      [
        '4:5: upstreams[1] takes the same host and path prefix as upstreams[0]: it would never be chosen',
        '4:13: upstreams[1].name repeats the name of upstreams[0]: route names are unique',
      ],
    );
  });
});

describe('sluice serve: a TLS listener', () => {
  let folder: string;
  before(() => {
    folder = mkdtempSync(join(tmpdir(), 'sluice-tls-'));
    execFileSync(
      'openssl',
      [
        ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
        ...['-keyout', join(folder, 'key.pem'), '-out', join(folder, 'cert.pem'), '-days', '1'],
        ...['-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'],
      ],
      { stdio: 'ignore', timeout: 30_000 },
    );
  });

  it('answers over https with the certificate it was given (a path from the environment too)', async () => {
    const cert = readFileSync(join(folder, 'cert.pem'));
    const server = await start(
      `version: 1\nserver: { tls: { cert: "\${CERT}", key: ${join(folder, 'key.pem')} } }\nrules: []\n`,
      { CERT: join(folder, 'cert.pem') },
    );
    try {
      assert.match(server.url, /^https:\/\/127\.0\.0\.1:\d+$/);
      assert.deepEqual(await get(`${server.url}/healthz`, {}, cert), {
        status: 200,
        body: '{"status":"ok"}',
      });
    } finally {
      await server.close();
    }
  });

  it('does not start on a file it cannot read, naming the option and never the path', async () => {
    await assert.rejects(
      start(
        `version: 1\nserver: { tls: { cert: ${join(folder, 'cert.pem')}, key: ${join(folder, 'none.pem')} } }\nrules: []\n`,
      ),
      (error: unknown) =>
        error instanceof StartError &&
        error.message === 'sluice serve: server.tls.key cannot be read (ENOENT)',
    );
    await assert.rejects(
      start(
        `version: 1\nserver: { tls: { cert: ${join(folder, 'key.pem')}, key: ${join(folder, 'key.pem')} } }\nrules: []\n`,
      ),
      (error: unknown) =>
        error instanceof StartError && /^sluice serve: server\.tls must name a PEM/.test(error.message),
    );
  });
});

describe('sluice check: a gateway rule on a path the server answers itself', () => {
  const rules = `rules:
  - name: items
    match: { paths: [/v1/*] }
    algorithm: token-bucket
    limit: 10
    period: 1m
`;

  it('warns, naming the rule, when the server keeps its own paths on the same listener', async () => {
    const file = policyFile(`version: 1\nupstream: http://127.0.0.1:3000\nserver: { admin: main }\n${rules}`);
    const result = await runSluice(['check', file]);
    assert.equal(result.code, 0);
    assert.equal(
      result.stderr,
      `${file}:6:22: warning: rules[0].match.paths[0] (rule "items") names paths the server answers itself on the same listener (server.admin: main): no such request reaches the upstream, nor this rule; leave server.admin out to give the server's own paths a listener of their own\n`,
    );
  });

  it('says nothing when the server has an admin listener of its own, or no gateway', async () => {
    for (const head of ['upstream: http://127.0.0.1:3000\n', ''])
      assert.equal((await runSluice(['check', policyFile(`version: 1\n${head}${rules}`)])).stderr, '');
  });
});

describe('where the listeners are', () => {
  const plan = (text: string, flags: { host?: string; adminHost?: string; adminPort?: number } = {}) =>
    listenerPlan(loadPolicyText(`version: 1\n${text}rules: []\n`).policy, {
      config: '/etc/sluice/sluice.yaml',
      host: '127.0.0.1',
      ...flags,
    });

  it('gives the server its own port 8412 on the main host with an upstream, and none without', () => {
    assert.deepEqual(plan('upstream: http://127.0.0.1:3000\n').admin, { host: '127.0.0.1', port: 8412 });
    assert.deepEqual(plan('upstream: http://127.0.0.1:3000\n', { host: '::1' }).admin, {
      host: '::1',
      port: 8412,
    });
    assert.equal(plan('').admin, undefined);
    assert.equal(plan('upstream: http://127.0.0.1:3000\nserver: { admin: main }\n').admin, undefined);
    assert.deepEqual(plan('server: { admin: { port: 9000, host: 10.0.0.1 } }\n').admin, {
      host: '10.0.0.1',
      port: 9000,
    });
    assert.deepEqual(plan('server: { admin: { port: 9000 } }\n', { adminHost: '::1', adminPort: 0 }).admin, {
      host: '::1',
      port: 0,
    });
    assert.deepEqual(plan('server: { tls: { cert: c.pem, key: /k.pem } }\n').tls, {
      cert: '/etc/sluice/c.pem',
      key: '/k.pem',
    });
  });

  it('asks for tokens where the API listens beyond loopback, not where only the gateway does', () => {
    const gateway = plan('upstream: http://127.0.0.1:3000\n', { host: '0.0.0.0', adminHost: '127.0.0.1' });
    assert.equal(tokensRequired(gateway, '0.0.0.0'), false);
    assert.equal(tokensRequired(plan('', { host: '0.0.0.0' }), '0.0.0.0'), true);
    assert.equal(
      tokensRequired(plan('upstream: http://127.0.0.1:3000\n', { host: '0.0.0.0' }), '0.0.0.0'),
      true,
    );
  });
});
