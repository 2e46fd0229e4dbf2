/**
 * `sluice serve` under load, the real CLI as a child process over keep-alive HTTP: 20 reloads
 * (by file change and by SIGHUP) while clients decide, with no request failed and no decision
 * other than the exact one; SIGTERM while clients decide and while a request is half sent.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { request, type IncomingMessage } from 'node:http';
import { requestValues } from './log-scan.js';
import { waitForLog, replacePolicy } from './ops-support.js';
import { startSluice, type RunningSluice } from './serve-support.js';

/** Far more than the test takes: the steady limit gets no token back while it runs (one per 10 min). */
const STEADY_LIMIT = 1000;
const policy = (toggled: number) => `version: 1
rules:
  - name: steady
    match: { paths: [/api/**] }
    key: [header:x-user]
    algorithm: token-bucket
    limit: ${STEADY_LIMIT}
    period: 7d
  - name: toggled
    match: { paths: [/api/**] }
    key: [header:x-user]
    algorithm: fixed-window
    limit: ${toggled}
    window: 1h
`;
const TOGGLED = [100_000, 99_999];

interface Tally {
  responses: number;
  failed: string[];
  wrong: string[];
  toggledLimits: Set<number>;
}

/**
 * One client deciding for its own user, one request after the other, until `stop()` says so or
 * `max` requests: the n-th decision of `steady` is exactly known (admitted with `limit - n`
 * left, then refused), whichever policy answered, since its limits never change.
 */
async function client(sluice: RunningSluice, user: string, max: number, stop: () => boolean, tally: Tally) {
  for (let n = 1; n <= max && !stop(); n++) {
    let reply;
    try {
      reply = await sluice.post('/v1/decisions', {
        items: [
          {
            request: { method: 'GET', path: '/api/items', headers: { 'x-user': user }, address: '127.0.0.1' },
          },
        ],
      });
    } catch (error) {
      tally.failed.push(`${user} #${n}: ${String(error)}`);
      return;
    }
    tally.responses++;
    if (reply.status !== 200) {
      tally.failed.push(`${user} #${n}: status ${reply.status}`);
      continue;
    }
    const result = reply.body.results[0];
    const steady = result.decisions.find((d: { rule: string }) => d.rule === 'steady');
    const admitted = n <= STEADY_LIMIT;
    if (steady.allowed !== admitted || steady.remaining !== (admitted ? STEADY_LIMIT - n : 0))
      tally.wrong.push(`${user} #${n}: steady ${JSON.stringify(steady)}`);
    const toggled = result.decisions.find((d: { rule: string }) => d.rule === 'toggled');
    if (admitted) {
      if (toggled === undefined || !toggled.allowed || !TOGGLED.includes(toggled.limit))
        tally.wrong.push(`${user} #${n}: toggled ${JSON.stringify(toggled)}`);
      else tally.toggledLimits.add(toggled.limit);
    } else if (result.status !== 429 || toggled !== undefined)
      tally.wrong.push(`${user} #${n}: ${result.status}`);
  }
}

/** A POST of `body` whose first bytes are sent now and the rest by `finish()`. */
function halfSent(sluice: RunningSluice, body: string) {
  for (const value of requestValues(JSON.parse(body))) sluice.sensitive(value);
  const req = request(`${sluice.url}/v1/decisions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
  });
  req.write(body.slice(0, 10));
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON of any shape
    finish: async (): Promise<{ status: number | undefined; json: any }> => {
      const answered = once(req, 'response');
      req.end(body.slice(10));
      const [response] = (await answered) as [IncomingMessage];
      let text = '';
      for await (const chunk of response) text += chunk;
      return { status: response.statusCode, json: JSON.parse(text) };
    },
  };
}

/** Waits until `done()` holds, at most 10 s. */
async function until(done: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!done()) {
    if (Date.now() > deadline) throw new Error('the clients made no progress in 10 s');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('sluice serve under load', () => {
  it('20 reloads during a bounded loop of decisions: 0 failed, 0 wrong', async () => {
    const sluice = await startSluice(policy(TOGGLED[0]!));
    try {
      const tally: Tally = { responses: 0, failed: [], wrong: [], toggledLimits: new Set() };
      let reloading = true;
      const users = ['load-user-1', 'load-user-2', 'load-user-3', 'load-user-4'];
      const clients = users.map((user) => client(sluice, user, 1500, () => !reloading, tally));
      for (let i = 1; i <= 20; i++) {
        // Odd reloads by a change of the file (the toggled rule's limit), even ones by SIGHUP.
        if (i % 2 === 1) replacePolicy(sluice.config, policy(TOGGLED[((i + 1) / 2) % 2]!));
        else sluice.child.kill('SIGHUP');
        await waitForLog(sluice, 'reload', i);
        // Some decisions between two reloads, so that each policy serves some.
        const seen = tally.responses;
        await until(() => tally.responses >= seen + 8 || tally.failed.length > 0);
      }
      reloading = false;
      await Promise.all(clients);
      assert.deepEqual(tally.failed, []);
      assert.deepEqual(tally.wrong, []);
      // Both policies answered during the run.
      assert.deepEqual([...tally.toggledLimits].sort(), [...TOGGLED].sort());
      assert.ok(tally.responses >= 160, `${tally.responses} responses`);
    } finally {
      assert.equal(await sluice.stop(), 0);
    }
  });

  it('a request that arrived before a reload is decided by the policy it arrived under', async () => {
    const sluice = await startSluice(policy(TOGGLED[0]!));
    try {
      const body = JSON.stringify({
        items: [
          {
            request: {
              method: 'GET',
              path: '/api/x',
              headers: { 'x-user': 'slow-user' },
              address: '127.0.0.1',
            },
          },
        ],
      });
      const slow = halfSent(sluice, body);
      await new Promise((r) => setTimeout(r, 50));
      // The toggled rule changes: the limiter the request will use is replaced while it waits.
      replacePolicy(sluice.config, policy(TOGGLED[1]!));
      await waitForLog(sluice, 'reload');
      const { status, json } = await slow.finish();
      assert.equal(status, 200);
      const toggled = json.results[0].decisions.find((d: { rule: string }) => d.rule === 'toggled');
      assert.equal(toggled.limit, TOGGLED[0]);
      assert.equal(toggled.allowed, true);
      // The next request is the new policy's.
      const after = await sluice.post('/v1/decisions', JSON.parse(body));
      assert.equal(after.body.results[0].decisions[1].limit, TOGGLED[1]);
    } finally {
      assert.equal(await sluice.stop(), 0);
    }
  });

  it('SIGTERM during decisions: requests in flight finish, the server exits 0', async () => {
    const sluice = await startSluice(policy(TOGGLED[0]!));
    const tally: Tally = { responses: 0, failed: [], wrong: [], toggledLimits: new Set() };
    const users = ['term-user-1', 'term-user-2', 'term-user-3'];
    // The clients run until their connection is refused (the server is gone).
    const clients = users.map((user) => client(sluice, user, 5000, () => false, tally));
    await until(() => tally.responses >= 60 || tally.failed.length > 0);

    // A request half sent when SIGTERM arrives is still answered once its body is complete.
    const half = halfSent(sluice, JSON.stringify({ items: [{ rule: 'steady', key: 'half-sent' }] }));
    await new Promise((r) => setTimeout(r, 50));
    const exited = once(sluice.child, 'exit');
    sluice.child.kill('SIGTERM');
    await waitForLog(sluice, 'stopping');
    const { status, json } = await half.finish();
    assert.equal(status, 200);
    assert.equal(json.results[0].remaining, STEADY_LIMIT - 1);

    await Promise.all(clients);
    const [code] = await exited;
    assert.equal(code, 0);
    assert.deepEqual(tally.wrong, []);
    // Each client stopped at its first connection error; every response before was right.
    for (const failure of tally.failed) assert.match(failure, /fetch failed|ECONNREFUSED|ECONNRESET|socket/i);
    assert.ok(
      tally.failed.every((f) => !/status/.test(f)),
      tally.failed.join('\n'),
    );
    await waitForLog(sluice, 'stopped');
    assert.equal(await sluice.stop(), 0);
  });
});
