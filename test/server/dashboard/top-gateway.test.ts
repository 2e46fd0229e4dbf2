/**
 * `sluice top` and gateway mode, against a real `sluice serve` in front of a real upstream: the
 * dashboard is on the admin listener, and the main listener forwards /dashboard/events to the
 * application like any other path. Looking in its default places, top asks the admin listener
 * first and never sends a request through the gateway; pointed at the gateway, it says where the
 * dashboard is instead of reading the application's answer as a feed that ended.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { runTop, type TopIo } from '../../../src/server/top/top.js';
import { closedPort, startUpstream, type Upstream } from '../gateway-support.js';
import { startSluice, type RunningSluice } from '../serve-support.js';

const policy = (upstream: string) => `version: 1
upstream: ${upstream}
rules:
  - name: everything
    algorithm: fixed-window
    limit: 1000
    window: 1h
`;

/** Runs top once (one table) at these places; its exit code and what it wrote. */
async function top(urls: string[], named = false): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io: TopIo = {
    out: (text) => (out += text),
    err: (text) => (err += text),
    tty: false,
    size: () => ({ columns: Infinity, rows: Infinity }),
  };
  const code = await runTop({ urls, named, token: undefined, iterations: 1 }, io);
  return { code, out, err };
}

describe('sluice top and gateway mode', () => {
  let upstream: Upstream;
  let sluice: RunningSluice;
  let status = 200;
  before(async () => {
    upstream = await startUpstream((_req, res) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end('{"from":"the application"}');
    });
    sluice = await startSluice(policy(upstream.url));
  });
  after(async () => {
    await sluice.stop();
    await upstream.close();
  });

  it('the server has an admin listener apart from the gateway', () => {
    assert.notEqual(sluice.admin, sluice.url);
  });

  it('in its default order, reads the admin listener and sends nothing to the application', async () => {
    const run = await top([sluice.admin, sluice.url]);
    assert.equal(run.code, 0, run.err);
    assert.match(run.out, /^everything\s/m);
    assert.equal(upstream.seen.length, 0);
  });

  it('goes past a place where nothing listens to the next one', async () => {
    const run = await top([`http://127.0.0.1:${await closedPort()}`, sluice.admin]);
    assert.equal(run.code, 0, run.err);
    assert.match(run.out, /^everything\s/m);
  });

  it("pointed at the gateway, says that the dashboard is on the admin listener (the application's 200)", async () => {
    status = 200;
    const run = await top([sluice.url], true);
    assert.equal(run.code, 2);
    assert.match(
      run.err,
      /^sluice top: the server at --url answered, but not with the dashboard's feed: in gateway mode the dashboard is on the admin listener \(server\.admin, port 8412 by default\): give its address with --url\n$/,
    );
  });

  it('pointed at the gateway, says so too when the application answers 404', async () => {
    status = 404;
    const run = await top([sluice.url], true);
    assert.equal(run.code, 2);
    assert.match(
      run.err,
      /has no dashboard \(404\): is it sluice serve\? in gateway mode the dashboard is on the admin listener/,
    );
  });

  it('after the default places, names the last one it tried, not --url', async () => {
    const run = await top([`http://127.0.0.1:${await closedPort()}`, sluice.url]);
    assert.equal(run.code, 2);
    assert.ok(run.err.includes(`the server at ${sluice.url} `), run.err);
  });
});
