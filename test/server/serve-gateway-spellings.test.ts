/**
 * Gateway mode under odd spellings: the path and host the rules read are the ones the upstream
 * receives. `sluice serve` (the real CLI) stands in front of a real upstream on loopback that
 * records every request; random spellings of a protected path (backslashes, dot segments,
 * percent-encoding, case, repeated and trailing slashes) and of a protected host (case, trailing
 * dot, ports) are sent byte for byte, and every one the upstream takes for the protected route
 * must have been charged to its rule: with a limit of 2, at most 2 reach it.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import {
  closedPort,
  openWebSocket,
  rawRequest,
  startUpstream,
  type RawAnswer,
  type Upstream,
} from './gateway-support.js';
import { startSluice, type RunningSluice } from './serve-support.js';

// The server's own paths beside the gateway's, on one listener: no spelling of one may be forwarded.
const policy = `version: 1
upstream: \${UPSTREAM}
server: { admin: main }
rules:
  - name: login
    match: { methods: [POST], paths: [/api/login] }
    key: [address, header:x-run]
    algorithm: fixed-window
    limit: 2
    window: 1h
  - { name: sockets, match: { paths: [/socket] }, algorithm: fixed-window, limit: 1, window: 1h }
  - name: hosted
    match: { host: api.example.com }
    key: [address, header:x-run]
    algorithm: fixed-window
    limit: 2
    window: 1h
`;

/**
 * The route a lenient application would route a path to: every escape decoded, `\\` read as `/`,
 * dot segments resolved, empty segments and a trailing slash ignored, case ignored. Whatever
 * it takes for `/api/login` must have been charged as `/api/login`.
 */
function leniently(url: string): string {
  let path = url.split('?')[0]!.replaceAll('\\', '/');
  try {
    path = decodeURIComponent(path).replaceAll('\\', '/');
  } catch {
    // A broken escape stays as written.
  }
  const kept: string[] = [];
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') kept.pop();
    else kept.push(segment);
  }
  return `/${kept.join('/')}`.toLowerCase();
}

/** The host a lenient application would serve: case, one trailing dot and any port ignored. */
function hostLeniently(host: string): string {
  const name = host.toLowerCase().replace(/:\d*$/, '');
  return name.endsWith('.') ? name.slice(0, -1) : name;
}

/** A random way to write one character of a path segment. */
const spelledChar = (char: string) =>
  fc.constantFrom(
    char,
    char.toUpperCase(),
    `%${char.charCodeAt(0).toString(16)}`,
    `%${char.charCodeAt(0).toString(16).toUpperCase()}`,
  );
const spelledCase = (word: string) =>
  fc
    .tuple(...[...word].map((char) => fc.constantFrom(char, char.toUpperCase())))
    .map((chars) => chars.join(''));
const spelledWord = (word: string) => fc.tuple(...[...word].map(spelledChar)).map((chars) => chars.join(''));
/** A random separator between segments: a slash, a backslash, more of them, dot segments. */
const separator = fc.constantFrom(
  '/',
  '\\',
  '//',
  '\\\\',
  '/./',
  '\\.\\',
  '/%2e/',
  '/x/../',
  '\\x\\..\\',
  '/x/%2E%2e/',
  '/x/.%2e\\',
  '%2F',
  '%5c',
);
const prefix = fc.constantFrom('', '/x/..', '/./', '/..', '//', '/%2e%2e');
const suffix = fc.constantFrom('', '/', '\\', '/.', '\\.', '//', '/x/..', '?next=/', '?a=\\..');
/** A spelling of `/api/login` as a client might write it, or a near miss. */
const loginSpelling = fc
  .tuple(prefix, separator, spelledWord('api'), separator, spelledWord('login'), suffix)
  .map(([head, first, api, between, login, tail]) => `${head}${first}${api}${between}${login}${tail}`)
  // node's parser refuses an origin-form target that does not start with `/`.
  .map((target) => (target.startsWith('/') ? target : `/${target}`));

describe('sluice serve: gateway, spellings of a path and a host', () => {
  let upstream: Upstream;
  let sluice: RunningSluice;
  let runs = 0;
  before(async () => {
    upstream = await startUpstream((req, res) => {
      req.resume();
      res.end('ok');
    });
    sluice = await startSluice(policy, [], { UPSTREAM: upstream.url });
  });
  after(async () => {
    assert.equal(await sluice.stop(), 0);
    await upstream.close();
  });

  /** What the upstream received under one run's key. */
  const seenIn = (run: string) => upstream.seen.filter((req) => req.headers['x-run'] === run);
  const chargedTo = (answer: RawAnswer, rule: string) =>
    (answer.headers.ratelimit ?? '').includes(`"${rule}"`);

  it("the spellings the issue reported are charged to the path's rule and reach it at most twice", async () => {
    const run = `listed-${runs++}`;
    const answers: RawAnswer[] = [];
    for (const target of ['/api\\login', '/x/..\\api\\login', '/API\\LOGIN', '/api/login\\', '/api/login'])
      for (let i = 0; i < 3; i++)
        answers.push(await rawRequest(sluice.url, 'POST', target, { 'x-run': run }));
    assert.deepEqual(
      answers.map((answer) => answer.status),
      [200, 200, ...Array<number>(13).fill(429)],
    );
    assert.ok(answers.every((answer) => chargedTo(answer, 'login')));
    // Forwarded as the proxy spells it, which is what the rules read.
    assert.deepEqual(
      seenIn(run).map((req) => req.url),
      ['/api/login', '/api/login'],
    );
  });

  /**
   * Sends each spelling in turn under a fresh key, each marked with its place; then checks that
   * at most 2 reached the upstream as the protected route, each answered as charged to `rule`.
   */
  async function sendAll(
    spellings: readonly string[],
    send: (spelling: string, marks: Record<string, string>) => Promise<RawAnswer>,
    protectedRoute: (req: Upstream['seen'][number]) => boolean,
    rule: string,
  ): Promise<void> {
    const run = `${rule}-${runs++}`;
    const answers: RawAnswer[] = [];
    for (let i = 0; i < spellings.length; i++) {
      const answer = await send(spellings[i]!, { 'x-run': run, 'x-seq': String(i) });
      // Refused outright, never forwarded: by sluice when it has no single reading, or by node's
      // parser (without a body) when it is no request target at all.
      if (answer.status === 400 && answer.body !== '') assert.match(answer.body, /"ambiguous_target"/);
      answers.push(answer);
    }
    const reached = seenIn(run).filter(protectedRoute);
    assert.ok(reached.length <= 2, `${reached.length} reached the upstream: ${spellings.join(' ')}`);
    for (const req of reached) {
      const seq = Number(req.headers['x-seq']);
      assert.ok(chargedTo(answers[seq]!, rule), `${spellings[seq]} reached it uncharged`);
    }
  }

  it('random spellings of a path: every request the upstream takes for the route was charged to its rule', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(loginSpelling, { minLength: 3, maxLength: 6 }), (targets) =>
        sendAll(
          targets,
          (target, marks) => rawRequest(sluice.url, 'POST', target, marks),
          (req) => leniently(req.url!) === '/api/login',
          'login',
        ),
      ),
      { numRuns: 60 },
    );
  });

  it('random spellings of a host: every request the upstream takes for the host was charged to its rule', async () => {
    const spelledHost = fc
      .tuple(
        spelledCase('api'),
        spelledCase('example'),
        spelledCase('com'),
        fc.constantFrom('', '.'),
        fc.constantFrom('', ':', ':443', ':80', ':8411'),
      )
      .map(([api, example, com, dot, port]) => `${api}.${example}.${com}${dot}${port}`);
    await fc.assert(
      fc.asyncProperty(fc.array(spelledHost, { minLength: 3, maxLength: 6 }), (hosts) =>
        sendAll(
          hosts,
          (host, marks) => rawRequest(sluice.url, 'GET', '/page', { host, ...marks }),
          (req) => hostLeniently(req.headers.host!) === 'api.example.com',
          'hosted',
        ),
      ),
      { numRuns: 40 },
    );
  });

  it('the spellings of a host the issue reported are charged to the host rule; a Host that names none is refused', async () => {
    const run = `hosts-${runs++}`;
    const statuses: number[] = [];
    for (const host of ['api.example.com.', 'api.example.com:', 'api.example.com.:443', 'API.example.com'])
      statuses.push((await rawRequest(sluice.url, 'GET', '/', { host, 'x-run': run })).status);
    assert.deepEqual(statuses, [200, 200, 429, 429]);
    for (const host of ['api.example.com..', 'api example.com', '[::1']) {
      const answer = await rawRequest(sluice.url, 'GET', '/', { host, 'x-run': run });
      assert.equal(answer.status, 400, host);
      assert.match(answer.body, /"ambiguous_target"/);
    }
    assert.equal(seenIn(run).length, 2);
  });

  it("forwards no spelling of the server's own paths, backslashes included", async () => {
    const run = `own-${runs++}`;
    for (const target of ['/v1\\reset', '/x/..\\v1\\forget', '/V1\\decisions', '\\v1/peek', '/healthz\\']) {
      const answer = await rawRequest(sluice.url, 'POST', target, { 'x-run': run });
      assert.notEqual(answer.status, 200, target);
    }
    assert.equal(seenIn(run).length, 0);
  });

  it('limits a WebSocket upgrade by the path it forwards, and refuses an ambiguous one', async () => {
    const opened = await openWebSocket(`${sluice.url}/socket`);
    assert.ok(opened.upgraded);
    opened.socket.destroy();
    const upgrade = { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13' };
    const key = { 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' };
    const again = await rawRequest(sluice.url, 'GET', '/x/..\\SOCKET\\', { ...upgrade, ...key });
    assert.equal(again.status, 429);
    const ambiguous = await rawRequest(sluice.url, 'GET', '/x%2F..%2Fsocket', { ...upgrade, ...key });
    assert.equal(ambiguous.status, 400);
    assert.match(ambiguous.body, /"ambiguous_target"/);
    assert.equal(upstream.seen.filter((req) => leniently(req.url!) === '/socket').length, 1);
  });

  it('refuses an encoded slash or backslash in the path with 400 and forwards nothing', async () => {
    const run = `encoded-${runs++}`;
    for (const target of ['/api%2Flogin', '/api%5clogin', '/x/..%2F..%2Fapi/login']) {
      const answer = await rawRequest(sluice.url, 'POST', target, { 'x-run': run });
      assert.equal(answer.status, 400, target);
      assert.equal(answer.headers['content-type'], 'application/problem+json');
      assert.match(answer.body, /"code":"ambiguous_target"/);
    }
    // In the query, an encoded slash is data, forwarded as it came.
    assert.equal((await rawRequest(sluice.url, 'GET', '/page?next=%2Fhome', { 'x-run': run })).status, 200);
    assert.deepEqual(
      seenIn(run).map((req) => req.url),
      ['/page?next=%2Fhome'],
    );
  });
});

describe('sluice serve: gateway, the example policy', () => {
  it('charges POST /api/messages\\ to the messages rule, not to the looser mutations rule', async () => {
    const echoPort = await closedPort();
    const example = readFileSync(new URL('../../sluice.example.yaml', import.meta.url), 'utf8');
    const sluice = await startSluice(example.replace(':8410', `:${echoPort}`), ['--echo-upstream']);
    sluice.sensitive('Bearer t-1');
    try {
      for (const target of ['/api/messages\\', '/API\\messages', '/api//messages/']) {
        const answer = await rawRequest(sluice.url, 'POST', target, { authorization: 'Bearer t-1' });
        assert.equal(answer.status, 200, target);
        assert.ok(answer.headers.ratelimit!.includes('"messages"'), target);
        assert.ok(!answer.headers.ratelimit!.includes('"mutations"'), target);
      }
    } finally {
      assert.equal(await sluice.stop(), 0);
    }
  });
});
