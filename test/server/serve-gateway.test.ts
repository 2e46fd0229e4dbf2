/**
 * Gateway mode: `sluice serve` (the real CLI, a child process) in front of a real upstream on
 * loopback, over real HTTP. Admitted requests reach the upstream as sent, bodies streamed both
 * ways, over kept-alive connections; refused ones get the library's responses and never reach
 * it; X-Forwarded-For follows the trusted proxies; WebSockets pass through, limited at upgrade.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent, request, type IncomingMessage } from 'node:http';
import { loadPolicyText } from '../../src/server/policy/load.js';
import { closedPort, exchange, openWebSocket, startUpstream, type Upstream } from './gateway-support.js';
import { issuesOf } from './policy-support.js';
import { startSluice, type RunningSluice } from './serve-support.js';

const policy = `version: 1
upstream: \${UPSTREAM}
rules:
  - { name: uploads, match: { paths: [/upload] }, algorithm: token-bucket, limit: 1000, period: 1m }
  - { name: limited, match: { paths: [/limited] }, algorithm: fixed-window, limit: 2, window: 1h }
  - name: denied
    match: { paths: [/denied] }
    deny: [loopback]
    algorithm: token-bucket
    limit: 100
    period: 1m
  - { name: per-client, match: { paths: [/client] }, algorithm: fixed-window, limit: 1, window: 1h }
  - { name: sockets, match: { paths: [/socket] }, algorithm: fixed-window, limit: 1, window: 1h }
`;

interface Answer {
  status: number;
  headers: IncomingMessage['headers'];
  body: string;
  reusedSocket: boolean;
}

/** One request with node:http (fetch would respell the path and hide the socket's reuse). */
function call(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string; agent?: Agent } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: options.method ?? 'GET',
      headers: options.headers ?? {},
      agent: options.agent ?? false,
      timeout: 10_000,
    });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () =>
        resolve({ status: res.statusCode!, headers: res.headers, body, reusedSocket: req.reusedSocket }),
      );
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 10 s')));
    req.on('error', reject);
    req.end(options.body);
  });
}

const pathsSeen = (upstream: Upstream, path: string) =>
  upstream.seen.filter((req) => req.url?.split('?')[0] === path).length;

describe('sluice serve: gateway mode', () => {
  let upstream: Upstream;
  let sluice: RunningSluice;
  before(async () => {
    upstream = await startUpstream((req, res) => {
      if (req.url?.startsWith('/upload')) {
        // An echo of the body as it arrives: a gateway that held either body back would stall.
        res.writeHead(201, {
          'content-type': 'application/octet-stream',
          'x-upstream': 'yes',
          'set-cookie': ['a=1', 'b=2'],
        });
        res.flushHeaders();
        req.pipe(res);
        return;
      }
      req.resume();
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ path: req.url }));
    });
    sluice = await startSluice(policy, [], { UPSTREAM: upstream.url });
    // The client addresses sent through the gateway, which its log must never show.
    sluice.sensitive('203.0.113.7', '203.0.113.8', '203.0.113.9', '10.1.2.3', '198.51.100.4', 'kept');
  });
  after(async () => {
    assert.equal(await sluice.stop(), 0);
    await upstream.close();
  });

  it('forwards method, path and query, headers and an 8 MiB body streamed both ways, adding the rule headers', async () => {
    const chunk = randomBytes(64 * 1024);
    const chunks = 128;
    const sent = createHash('sha256');
    for (let i = 0; i < chunks; i++) sent.update(chunk);
    const answer = await new Promise<{ res: IncomingMessage; digest: string; bytes: number }>(
      (resolve, reject) => {
        const req = request(`${sluice.url}/upload?part=1&x=%2F`, {
          method: 'PUT',
          headers: { 'x-custom': 'kept', 'content-type': 'application/octet-stream' },
          agent: false,
        });
        const timer = setTimeout(() => req.destroy(new Error('the bodies did not stream')), 20_000);
        req.on('error', reject);
        // The first chunk alone, then the rest only once its echo came back through the gateway.
        req.write(chunk);
        req.on('response', (res) => {
          const got = createHash('sha256');
          let bytes = 0;
          let rest = false;
          res.on('data', (data: Buffer) => {
            got.update(data);
            bytes += data.length;
            if (!rest && bytes >= chunk.length) {
              rest = true;
              for (let i = 1; i < chunks; i++) req.write(chunk);
              req.end();
            }
          });
          res.on('end', () => {
            clearTimeout(timer);
            resolve({ res, digest: got.digest('hex'), bytes });
          });
        });
      },
    );
    assert.equal(answer.res.statusCode, 201);
    assert.equal(answer.bytes, chunk.length * chunks);
    assert.equal(answer.digest, sent.digest('hex'));
    assert.equal(answer.res.headers['x-upstream'], 'yes');
    assert.deepEqual(answer.res.headers['set-cookie'], ['a=1', 'b=2']);
    assert.equal(answer.res.headers['ratelimit-policy'], '"uploads";q=1000;w=60');
    const received = upstream.seen.at(-1)!;
    assert.equal(received.method, 'PUT');
    assert.equal(received.url, '/upload?part=1&x=%2F');
    assert.equal(received.headers['x-custom'], 'kept');
    assert.equal(received.headers['transfer-encoding'], 'chunked');
  });

  it('keeps connections alive on both sides', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const before = upstream.connections();
      const answers: Answer[] = [];
      for (let i = 0; i < 5; i++) answers.push(await call(`${sluice.url}/plain/${i}`, { agent }));
      assert.deepEqual(
        answers.map((a) => [a.status, JSON.parse(a.body).path, a.reusedSocket]),
        [0, 1, 2, 3, 4].map((i) => [200, `/plain/${i}`, i > 0]),
      );
      // Five requests one after the other: one pooled connection to the upstream at most.
      assert.ok(upstream.connections() - before <= 1, `${upstream.connections() - before} connections`);
    } finally {
      agent.destroy();
    }
  });

  it("answers refusals itself with the library's 429 and 403, and the upstream never sees them", async () => {
    const answers: Answer[] = [];
    // The second comes from a page on another origin: only its admitted response lists what it exposes.
    const fromPage: Record<string, string> = { origin: 'https://app.example' };
    for (const headers of [{}, fromPage, {}]) {
      answers.push(await call(`${sluice.url}/limited`, { method: 'POST', body: 'data', headers }));
    }
    const refused = answers[2];
    assert.deepEqual(
      answers.map((answer) => answer.status),
      [200, 200, 429],
    );
    const exposed = answers.map((answer) => answer.headers['access-control-expose-headers']);
    const list = 'Retry-After, RateLimit, RateLimit-Policy';
    assert.deepEqual(exposed, [undefined, list, list]);
    assert.equal(refused!.headers['content-type'], 'application/problem+json');
    assert.equal(refused!.headers['cache-control'], 'no-store');
    assert.match(String(refused!.headers['retry-after']), /^\d+$/);
    assert.equal(refused!.headers['ratelimit-policy'], '"limited";q=2;w=3600');
    assert.match(String(refused!.headers.ratelimit), /^"limited";r=0;t=\d+$/);
    const body = JSON.parse(refused!.body);
    assert.equal(body.status, 429);
    assert.equal(body.code, 'rate_limited');
    assert.deepEqual(body.limits, ['limited']);
    assert.equal(pathsSeen(upstream, '/limited'), 2);

    const denied = await call(`${sluice.url}/denied`);
    assert.equal(denied.status, 403);
    assert.equal(JSON.parse(denied.body).code, 'denied');
    assert.equal(pathsSeen(upstream, '/denied'), 0);
  });

  it('with server.admin: main, answers its own paths in every spelling and forwards none of them', async () => {
    const shared = await startSluice(
      policy.replace('version: 1\n', 'version: 1\nserver: { admin: main }\n'),
      [],
      {
        UPSTREAM: upstream.url,
      },
    );
    try {
      assert.equal(shared.admin, shared.url);
      const before = upstream.seen.length;
      assert.deepEqual(JSON.parse((await call(`${shared.url}/healthz`)).body), { status: 'ok' });
      assert.equal((await call(`${shared.url}/openapi.json`)).status, 200);
      for (const path of [
        '/v1',
        '/v1/nothing',
        '/V1/decisions',
        '//v1/peek',
        '/x/../v1/reset',
        '/%761/forget',
      ])
        assert.equal(JSON.parse((await call(`${shared.url}${path}`)).body).title.length > 0, true, path);
      assert.equal(upstream.seen.length, before);
    } finally {
      assert.equal(await shared.stop(), 0);
    }
  });

  it('appends the peer to the X-Forwarded-For of a trusted proxy, and keys by the client it names', async () => {
    const from = (client: string) =>
      call(`${sluice.url}/client`, { headers: { 'x-forwarded-for': `${client}, 10.1.2.3` } });
    // Loopback is trusted by default; 10.1.2.3 is not, so it is the client.
    assert.equal((await from('203.0.113.7')).status, 200);
    assert.equal(upstream.seen.at(-1)!.headers['x-forwarded-for'], '203.0.113.7, 10.1.2.3, 127.0.0.1');
    assert.equal(upstream.seen.at(-1)!.headers['x-forwarded-proto'], 'http');
    assert.equal((await from('203.0.113.8')).status, 429, 'the same client 10.1.2.3 twice');
    const alone = await call(`${sluice.url}/client`, { headers: { 'x-forwarded-for': '203.0.113.9' } });
    assert.equal(alone.status, 200, 'another client');
    assert.equal(upstream.seen.at(-1)!.headers['x-forwarded-for'], '203.0.113.9, 127.0.0.1');
  });

  it('passes a WebSocket through, limited at upgrade time', async () => {
    const opened = await openWebSocket(`${sluice.url}/socket`, { 'x-forwarded-for': '198.51.100.4' });
    assert.ok(opened.upgraded);
    try {
      assert.equal(await exchange(opened.socket, 'hello'), 'echo: hello');
      assert.equal(await exchange(opened.socket, 'x'.repeat(1000)), `echo: ${'x'.repeat(1000)}`);
      const upgrade = upstream.seen.at(-1)!;
      assert.equal(upgrade.url, '/socket');
      assert.equal(upgrade.headers['x-forwarded-for'], '198.51.100.4, 127.0.0.1');
      const refused = await openWebSocket(`${sluice.url}/socket`, { 'x-forwarded-for': '198.51.100.4' });
      assert.ok(!refused.upgraded);
      assert.equal(refused.status, 429);
      assert.equal(refused.headers['content-type'], 'application/problem+json');
      assert.equal(JSON.parse(refused.body).code, 'rate_limited');
      assert.equal(pathsSeen(upstream, '/socket'), 1);
    } finally {
      opened.socket.destroy();
    }
  });
});

describe('sluice serve: gateway mode, other settings', () => {
  it('from a peer it does not trust, drops the forwarding headers the client wrote and keys by the peer', async () => {
    const upstream = await startUpstream((req, res) => {
      req.resume();
      res.end('ok');
    });
    const sluice = await startSluice(
      `version: 1
upstream: \${UPSTREAM}
clients: { trustedProxies: [192.0.2.1] }
rules:
  - { name: per-client, algorithm: fixed-window, limit: 1, window: 1h }
`,
      [],
      { UPSTREAM: upstream.url },
    );
    sluice.sensitive('203.0.113.7', '203.0.113.8', 'elsewhere.example');
    try {
      const first = await call(`${sluice.url}/a`, {
        headers: {
          'x-forwarded-for': '203.0.113.7',
          'x-real-ip': '203.0.113.7',
          forwarded: 'for=203.0.113.7',
          'x-forwarded-host': 'elsewhere.example',
        },
      });
      assert.equal(first.status, 200);
      const seen = upstream.seen.at(-1)!.headers;
      assert.equal(seen['x-forwarded-for'], '127.0.0.1');
      assert.equal(seen['x-real-ip'], undefined);
      assert.equal(seen.forwarded, undefined);
      assert.equal(seen['x-forwarded-host'], new URL(sluice.url).host);
      const second = await call(`${sluice.url}/a`, { headers: { 'x-forwarded-for': '203.0.113.8' } });
      assert.equal(second.status, 429, 'one client: the peer');
    } finally {
      assert.equal(await sluice.stop(), 0);
      await upstream.close();
    }
  });

  it('answers 502 problem+json when the upstream is down, for requests and upgrades alike, and logs it', async () => {
    const sluice = await startSluice(
      'version: 1\nupstream: ${UPSTREAM}\nrules: [{ name: all, algorithm: token-bucket, limit: 100, period: 1m }]\n',
      [],
      { UPSTREAM: `http://127.0.0.1:${await closedPort()}` },
    );
    try {
      const answer = await call(`${sluice.url}/anything`, { method: 'POST', body: 'x' });
      assert.equal(answer.status, 502);
      assert.equal(answer.headers['content-type'], 'application/problem+json');
      assert.deepEqual(JSON.parse(answer.body), {
        type: 'about:blank',
        title: 'Bad Gateway',
        status: 502,
        detail: 'The upstream did not answer.',
        code: 'bad_gateway',
      });
      const upgrade = await openWebSocket(`${sluice.url}/socket`);
      assert.ok(!upgrade.upgraded);
      assert.equal(upgrade.status, 502);
      assert.equal(JSON.parse(upgrade.body).code, 'bad_gateway');
      assert.equal((await call(`${sluice.admin}/healthz`)).status, 200);
      // One log line for both failures (at most one a minute), by code, without the message.
      const failures = sluice
        .output()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line))
        .filter((entry) => entry.event === 'upstream-failure');
      assert.deepEqual(
        failures.map((entry) => [entry.level, entry.error, entry.failures, entry.msg]),
        [['warn', 'ECONNREFUSED', 1, 'the upstream did not answer: 502 to the client']],
      );
    } finally {
      assert.equal(await sluice.stop(), 0);
    }
  });

  it('SIGTERM cuts open WebSocket tunnels and exits 0', async () => {
    const upstream = await startUpstream((_req, res) => res.end());
    const sluice = await startSluice('version: 1\nupstream: ${UPSTREAM}\nrules: []\n', [], {
      UPSTREAM: upstream.url,
    });
    try {
      const opened = await openWebSocket(`${sluice.url}/socket`);
      assert.ok(opened.upgraded);
      assert.equal(await exchange(opened.socket, 'before'), 'echo: before');
      const closed = new Promise<void>((resolve) => opened.socket.once('close', () => resolve()));
      assert.equal(await sluice.stop(), 0);
      await closed;
    } finally {
      await upstream.close();
    }
  });

  it("the README's gateway line, on the example policy with the echo upstream npm start runs", async () => {
    const echoPort = await closedPort();
    const example = readFileSync(new URL('../../sluice.example.yaml', import.meta.url), 'utf8');
    assert.match(example, /^upstream: http:\/\/127\.0\.0\.1:8410$/m);
    const sluice = await startSluice(example.replace(':8410', `:${echoPort}`), ['--echo-upstream']);
    sluice.sensitive('ann', 'hunter2');
    try {
      assert.match(sluice.output(), /gateway to http:\/\/127\.0\.0\.1:\d+ \(the built-in echo application\)/);
      const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
      const quick = readme.slice(readme.indexOf('## Quick start'), readme.indexOf('## In a web framework'));
      const line = /^curl -si 127\.0\.0\.1:8411(\/\S+) -H '([^:]+): ([^']*)' -d '([^']*)'$/m.exec(quick);
      assert.ok(line !== null, 'the gateway curl line');
      const [, path, header, value, data] = line;
      const statuses: number[] = [];
      let echoed: Answer | undefined;
      for (let i = 0; i < 11; i++) {
        const answer = await call(`${sluice.url}${path}`, {
          method: 'POST',
          headers: { [header!]: value!, 'content-type': 'application/x-www-form-urlencoded' },
          body: data,
        });
        statuses.push(answer.status);
        echoed ??= answer;
      }
      assert.deepEqual(statuses, [...Array<number>(10).fill(200), 429]);
      const echo = JSON.parse(echoed!.body);
      assert.equal(echo.method, 'POST');
      assert.equal(echo.url, path);
      assert.equal(echo.body, data);
      assert.equal(echo.headers['x-forwarded-for'], '127.0.0.1');
      assert.match(String(echoed!.headers.ratelimit), /^"login-ip";r=29;t=\d+, "login";r=9;t=\d+$/);
    } finally {
      assert.equal(await sluice.stop(), 0);
    }
  });
});

describe('policy: upstream', () => {
  it('is an http:// or https:// URL of a reachable form, errors at its line', () => {
    const rules = 'rules: []\n';
    assert.deepEqual(issuesOf(`version: 1\nupstream: ftp://127.0.0.1\n${rules}`), [
      '2:11: upstream must be an http:// or https:// URL without credentials, query or fragment, such as "http://127.0.0.1:3000"',
    ]);
    assert.deepEqual(issuesOf(`version: 1\nupstream: http://user:pw@127.0.0.1\n${rules}`), [
      '2:11: upstream must be an http:// or https:// URL without credentials, query or fragment, such as "http://127.0.0.1:3000"',
    ]);
    assert.deepEqual(issuesOf(`version: 1\nupstream: http://127.0.0.1:99999\n${rules}`), [
      '2:11: upstream must be a URL whose host and port can be reached (a port is at most 65535)',
    ]);
    assert.equal(
      loadPolicyText(`version: 1\nupstream: https://app.internal:8443/base\n${rules}`).policy.upstream,
      'https://app.internal:8443/base',
    );
    assert.equal(loadPolicyText(`version: 1\n${rules}`).policy.upstream, undefined);
  });

  it('--echo-upstream needs an upstream on loopback with a port', async () => {
    const { runSluice, policyFile } = await import('./cli-support.js');
    const file = policyFile('version: 1\nupstream: http://app.internal:3000\nrules: []\n');
    const result = await runSluice(['serve', '--config', file, '--port', '0', '--echo-upstream']);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /--echo-upstream runs the echo application at the policy's upstream/);
  });
});
