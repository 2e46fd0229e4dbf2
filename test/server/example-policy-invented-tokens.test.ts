/**
 * The shipped example policy (sluice.example.yaml) through `sluice serve` in gateway mode: a
 * client that invents a new bearer token for every request finds a full per-token bucket each
 * time, so each rule keyed by a token has a per-address rule ahead of it, and that rule stops
 * the client. The server's clock is a file the test sets, so the counts are exact.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { answerOf, startUpstream, type Upstream } from './gateway-support.js';
import { startSluice, type RunningSluice } from './serve-support.js';

interface Answer {
  status: number;
  body: string;
}

function call(url: string, headers: Record<string, string>, agent: Agent): Promise<Answer> {
  return answerOf(request(url, { method: 'POST', headers, agent }), '{}');
}

/** Each rule keyed by a bearer token, a route it guards, and the per-address rule ahead of it with its burst. */
const guarded = [
  { rule: 'messages', path: '/api/messages', guard: 'messages-ip', burst: 30 },
  { rule: 'mutations', path: '/api/rooms/7/ack', guard: 'mutations-ip', burst: 180 },
  { rule: 'writes', path: '/courses/42', guard: 'writes-ip', burst: 30 },
];

describe('the example policy and invented bearer tokens', () => {
  let upstream: Upstream;
  let sluice: RunningSluice;
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });

  before(async () => {
    upstream = await startUpstream((_req, res) => res.end('ok'));
    const example = readFileSync(new URL('../../sluice.example.yaml', import.meta.url), 'utf8');
    assert.match(example, /^upstream: http:\/\/127\.0\.0\.1:8410$/m);
    const clockFile = join(mkdtempSync(join(tmpdir(), 'sluice-clock-')), 'now');
    writeFileSync(clockFile, String(Date.UTC(2026, 0, 1)));
    sluice = await startSluice(example.replace('http://127.0.0.1:8410', upstream.url), [], {
      SLUICE_TEST_CLOCK_FILE: clockFile,
    });
  });

  after(async () => {
    agent.destroy();
    assert.equal(await sluice.stop(), 0);
    await upstream.close();
  });

  for (const { rule, path, guard, burst } of guarded) {
    it(`200 requests to ${path}, each with a new bearer token, from one address: ${guard} stops them after ${burst}`, async () => {
      const before = upstream.seen.length;
      const statuses: number[] = [];
      const refusedBy = new Set<string>();
      for (let i = 0; i < 200; i++) {
        const token = `Bearer ${randomBytes(12).toString('hex')}`;
        sluice.sensitive(token);
        const answer = await call(
          `${sluice.url}${path}`,
          { authorization: token, 'content-type': 'application/json' },
          agent,
        );
        statuses.push(answer.status);
        if (answer.status === 429) for (const name of JSON.parse(answer.body).limits) refusedBy.add(name);
      }
      assert.deepEqual(statuses, [
        ...Array<number>(burst).fill(200),
        ...Array<number>(200 - burst).fill(429),
      ]);
      assert.equal(upstream.seen.length - before, burst, `${rule}: requests that reached the application`);
      assert.deepEqual([...refusedBy], [guard]);
    });
  }
});
