/**
 * The dashboard of `sluice serve` over real HTTP (the CLI as a child process): what its feed says
 * against the traffic sent, that no address, header value or key of that traffic reaches it,
 * the bucket inspector, who may see it (loopback without tokens; the admin scope, by bearer
 * token or the login form's session, with tokens), and a gateway that never forwards it.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { writeFileSync } from 'node:fs';
import { runSluice } from '../cli-support.js';
import { fromAddress, startSluice, type RunningSluice } from '../serve-support.js';
import { readFeed, totalOf } from './sse-support.js';
import {
  NICK,
  OFFENDER,
  OTHER,
  RULES as rules,
  SHADOWED,
  sendTraffic as traffic,
  countsAllRefusals,
} from './traffic-support.js';

const SECRET = 'dashboard-test-secret-0123456789abcdef';
const ADMIN = 'admin-token-dashboard-0123456789';
const DECIDE = 'decide-token-dashboard-0123456789';

/** A GET with any Host header (fetch sets its own). */
function getWithHost(url: string, path: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('sluice serve: the dashboard without tokens (loopback)', () => {
  let sluice: RunningSluice;
  before(async () => {
    sluice = await startSluice(`version: 1\n${rules}`);
    await traffic(sluice);
  });
  after(async () => {
    await sluice.stop();
  });

  it('feeds counts that match the traffic, with the heaviest refused id and the shadow would-refuse', async () => {
    const { snapshot, text } = await readFeed(sluice.url, countsAllRefusals);
    assert.equal(totalOf(snapshot, 'login', 'admitted'), 4);
    assert.equal(totalOf(snapshot, 'search', 'admitted'), 2);
    const login = snapshot.rules.find((r) => r.name === 'login')!;
    assert.equal(login.limits[0]!.refused.length, 1);
    assert.equal(login.limits[0]!.refused[0]!.count, 2);
    assert.match(login.limits[0]!.refused[0]!.id, /^fp:[\w-]{22}$/);
    const search = snapshot.rules.find((r) => r.name === 'search')!;
    assert.equal(search.mode, 'shadow');
    assert.equal(search.limits[0]!.shadow[0]!.count, 2);
    assert.equal(snapshot.policy.ids, 'fingerprint');
    assert.deepEqual(snapshot.recent.map((r) => r.outcome).sort(), [
      'refused',
      'refused',
      'shadow-refused',
      'shadow-refused',
    ]);
    for (const value of [OFFENDER, OTHER, SHADOWED, NICK]) assert.ok(!text.includes(value), value);
  });

  it('inspects the bucket of a typed key: the same id as the offender, nothing charged, nothing echoed', async () => {
    const { snapshot } = await readFeed(sluice.url, countsAllRefusals);
    const offender = snapshot.rules[0]!.limits[0]!.refused[0]!.id;
    const reply = await sluice.post('/dashboard/inspect', { rule: 'login', parts: { address: OFFENDER } });
    assert.equal(reply.status, 200);
    assert.equal(reply.body.id, offender);
    assert.deepEqual(
      reply.body.limits.map((l: { remaining: number; allowed: boolean }) => [l.remaining, l.allowed]),
      [[0, false]],
    );
    assert.ok(!JSON.stringify(reply.body).includes(OFFENDER));
    const shadow = await sluice.post('/dashboard/inspect', {
      rule: 'search',
      parts: { address: SHADOWED, 'header:x-nick': NICK },
    });
    assert.equal(shadow.body.id, snapshot.rules[1]!.limits[0]!.shadow[0]!.id);
    assert.equal(shadow.body.mode, 'shadow');
    const fresh = await sluice.post('/dashboard/inspect', {
      rule: 'login',
      parts: { address: '192.0.2.55' },
    });
    assert.equal(fresh.body.limits[0].remaining, 3);
    const again = await readFeed(sluice.url, countsAllRefusals);
    assert.equal(totalOf(again.snapshot, 'login', 'admitted'), 4, 'a peek charges nothing');
  });

  it('refuses a bad inspection with a clear error that quotes nothing', async () => {
    const bad = await sluice.post('/dashboard/inspect', {
      rule: 'login',
      parts: { address: 'not-an-ip-42' },
    });
    assert.equal(bad.status, 400);
    assert.match(bad.body.detail, /address part is not an IP address/);
    assert.ok(!JSON.stringify(bad.body).includes('not-an-ip-42'));
    assert.equal((await sluice.post('/dashboard/inspect', { rule: 'nope', parts: {} })).status, 404);
    assert.equal((await sluice.post('/dashboard/inspect', { rule: 'login', parts: [] })).status, 400);
    assert.equal((await sluice.post('/dashboard/inspect', 'not json')).status, 400);
  });

  it('serves the page and its assets itself, with a content security policy', async () => {
    const page = await fetch(`${sluice.url}/dashboard`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-security-policy')!, /default-src 'self'/);
    const html = await page.text();
    assert.match(html, /<script defer src="\/dashboard\/app\.js">/);
    assert.ok(!/https?:\/\//.test(html), 'nothing loaded from elsewhere');
    const script = await fetch(`${sluice.url}/dashboard/app.js`);
    assert.equal(script.status, 200);
    assert.match(script.headers.get('content-type')!, /javascript/);
    assert.match(await script.text(), /EventSource/);
    assert.equal((await fetch(`${sluice.url}/dashboard/app.css`)).status, 200);
    assert.equal((await fetch(`${sluice.url}/dashboard/nothing`)).status, 404);
  });

  it('answers only a loopback Host without tokens (a page elsewhere cannot rebind a name to it)', async () => {
    const port = new URL(sluice.url).port;
    assert.equal(await getWithHost(sluice.url, '/dashboard', `localhost:${port}`), 200);
    assert.equal(await getWithHost(sluice.url, '/dashboard', 'attacker.example'), 403);
    assert.equal(await getWithHost(sluice.url, '/dashboard/events', 'attacker.example'), 403);
  });

  it('shows a rejected reload', async () => {
    writeFileSync(sluice.config, 'version: 1\nrules: [ { name: broken } ]\n');
    sluice.child.kill('SIGHUP');
    const { snapshot } = await readFeed(sluice.url, (s) => s.policy.reload?.result === 'rejected');
    assert.equal(snapshot.rules.length, 2, 'the policy served stays');
  });
});

describe('sluice serve: the dashboard with tokens and a pseudonym secret', () => {
  let sluice: RunningSluice;
  const policy = `version: 1
clients:
  pseudonymSecret: "\${SECRET}"
auth:
  tokens:
    - { token: "${DECIDE}", scopes: [decide] }
    - { token: "${ADMIN}", scopes: [decide, admin] }
${rules}`;
  const admin = { authorization: `Bearer ${ADMIN}` };
  before(async () => {
    sluice = await startSluice(policy, [], { SECRET });
    sluice.sensitive(ADMIN, DECIDE, SECRET);
    await traffic(sluice, admin);
  });
  after(async () => {
    await sluice.stop();
  });

  it('wants the admin scope: none is 401, decide only is 403, admin by bearer token streams', async () => {
    assert.equal((await fetch(`${sluice.url}/dashboard/events`)).status, 401);
    const decideOnly = await fetch(`${sluice.url}/dashboard/events`, {
      headers: { authorization: `Bearer ${DECIDE}` },
    });
    assert.equal(decideOnly.status, 403);
    const { snapshot, text } = await readFeed(sluice.url, countsAllRefusals, admin);
    assert.equal(snapshot.policy.ids, 'hmac');
    for (const value of [OFFENDER, OTHER, SHADOWED, NICK, SECRET, ADMIN])
      assert.ok(!text.includes(value), value);
  });

  it('names a refused bucket by the start of its HMAC, the key sluice explain shows as stored', async () => {
    const { snapshot } = await readFeed(sluice.url, countsAllRefusals, admin);
    const id = snapshot.rules[0]!.limits[0]!.refused[0]!.id;
    assert.match(id, /^key:v1:[\w-]{22}$/);
    const explained = await runSluice(
      ['explain', sluice.config, 'POST /api/login', '--address', OFFENDER, '--format', 'json'],
      { SECRET },
    );
    assert.equal(explained.code, 0, explained.stderr);
    const stored = JSON.parse(explained.stdout).rules[0].key.stored as string;
    assert.ok(stored.startsWith(id), `${stored} does not start with ${id}`);
  });

  it("resets a bucket by its id: the admin scope's, as JSON from the page's own origin, an id it showed", async () => {
    const { snapshot } = await readFeed(sluice.url, countsAllRefusals, admin);
    const id = snapshot.rules[0]!.limits[0]!.refused[0]!.id;
    const act = (headers: Record<string, string>, body: unknown = { rule: 'login', id, action: 'reset' }) =>
      fetch(`${sluice.url}/dashboard/buckets`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
    assert.equal((await act({})).status, 401);
    assert.equal((await act({ authorization: `Bearer ${DECIDE}` })).status, 403);
    assert.equal((await act({ ...admin, 'content-type': 'text/plain' })).status, 403, 'what a form can send');
    assert.equal((await act({ ...admin, 'sec-fetch-site': 'cross-site' })).status, 403);
    const unknown = await act(admin, { rule: 'login', id: 'key:v1:AAAAAAAAAAAAAAAAAAAAAA', action: 'reset' });
    assert.equal(unknown.status, 404);
    assert.match(((await unknown.json()) as { detail: string }).detail, /not shown lately/);
    assert.equal((await act(admin, { rule: 'login', id, action: 'erase' })).status, 400);
    const before = await sluice.post('/v1/peek', { items: [fromAddress(OFFENDER)] }, admin);
    assert.equal(before.body.results[0].decisions[0].remaining, 0);
    const done = await act(admin);
    assert.equal(done.status, 200);
    assert.deepEqual(await done.json(), { rule: 'login', id, action: 'reset', limits: 1 });
    const after = await sluice.post('/v1/peek', { items: [fromAddress(OFFENDER)] }, admin);
    assert.equal(after.body.results[0].decisions[0].remaining, 3);
    const audit = sluice
      .output()
      .split('\n')
      .filter((line) => line.includes('"event":"bucket-reset"'));
    assert.equal(audit.length, 1);
    assert.match(audit[0]!, new RegExp(`"rule":"login","bucket":"${id}","limits":1`));
  });

  it('signs a browser in by the login form: an admin token sets a session cookie, anything else does not', async () => {
    const page = await fetch(`${sluice.url}/dashboard`);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<form method="post" action="\/dashboard\/login">/);
    const login = (token: string) =>
      fetch(`${sluice.url}/dashboard/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token }).toString(),
        redirect: 'manual',
      });
    for (const token of [DECIDE, 'wrong-token-0123456789']) {
      const refused = await login(token);
      assert.equal(refused.status, 401);
      assert.equal(refused.headers.get('set-cookie'), null);
      assert.ok(!(await refused.text()).includes(token));
    }
    const elsewhere = await fetch(`${sluice.url}/dashboard/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://attacker.example' },
      body: new URLSearchParams({ token: ADMIN }).toString(),
      redirect: 'manual',
    });
    assert.equal(elsewhere.status, 403, 'a form posted from another site signs no one in');
    assert.equal(elsewhere.headers.get('set-cookie'), null);
    const signedIn = await login(ADMIN);
    assert.equal(signedIn.status, 303);
    const cookie = signedIn.headers.get('set-cookie')!;
    assert.match(
      cookie,
      /^sluice_dashboard=[0-9a-f]{64}\.[0-9a-f]{64}; Path=\/dashboard; HttpOnly; SameSite=Strict$/,
    );
    assert.ok(!cookie.includes(ADMIN));
    const session = { cookie: cookie.split(';')[0]! };
    const dashboard = await fetch(`${sluice.url}/dashboard`, { headers: session });
    assert.match(await dashboard.text(), /\/dashboard\/app\.js/);
    await readFeed(sluice.url, countsAllRefusals, session);
    const forged = { cookie: session.cookie.replace(/.$/, (c) => (c === '0' ? '1' : '0')) };
    assert.equal((await fetch(`${sluice.url}/dashboard/events`, { headers: forged })).status, 401);
  });
});

describe('sluice serve: the dashboard in gateway mode', () => {
  let sluice: RunningSluice;
  before(async () => {
    // Nothing listens upstream: a forwarded request would be a 502. The dashboard is on the
    // gateway's listener, where no spelling of it may be forwarded.
    sluice = await startSluice(`version: 1\nupstream: http://127.0.0.1:9\nserver: { admin: main }\n${rules}`);
  });
  after(async () => {
    await sluice.stop();
  });

  it('answers /dashboard itself in any spelling the rules would see, never forwarding it', async () => {
    assert.equal((await fetch(`${sluice.url}/dashboard`)).status, 200);
    assert.equal((await fetch(`${sluice.url}/dashboard/app.css`)).status, 200);
    for (const path of ['/DASHBOARD/events', '/dashboard//x', '/dashboard/./app.js'])
      assert.notEqual((await fetch(`${sluice.url}${path}`)).status, 502, path);
    assert.equal((await fetch(`${sluice.url}/elsewhere`)).status, 502);
  });
});

describe('sluice serve: the dashboard at shutdown', () => {
  it('ends open streams on SIGTERM, so that they hold no stop back', async () => {
    const sluice = await startSluice(`version: 1\n${rules}`);
    const response = await fetch(`${sluice.url}/dashboard/events`);
    assert.equal(response.status, 200);
    const reading = (async () => {
      let bytes = 0;
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) bytes += chunk.length;
      return bytes;
    })();
    // Exit code 0, not the SIGKILL stopChild sends after 10 s.
    assert.equal(await sluice.stop(), 0);
    assert.ok((await reading) > 0, 'the stream ended after its events');
  });
});
