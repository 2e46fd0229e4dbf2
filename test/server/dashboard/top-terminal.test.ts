/**
 * `sluice top` in a real terminal (a tmux pane, read back as the screen shows it): at 80×24 the
 * header stays on the first line and every column of the rules table is on screen, numbers
 * whole and names cut; after the terminal is resized, the table is drawn again at the new size
 * without waiting for a snapshot. The feed is a stand-in that sends one snapshot and then
 * nothing, so only a resize can redraw.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RuleView, Snapshot } from '../../../src/server/dashboard/snapshot-types.js';
import { bin, root } from '../cli-support.js';

const LONG = 'a-rule-with-a-name-far-too-long-for-a-terminal-of-eighty-columns';
const HEADINGS = [
  'RULE',
  'ADMIT',
  'REFUSE',
  'SHADOW',
  'F-OPEN',
  'F-CLOSED',
  'DENIED',
  'RATIO',
  'TOTAL a/r/s',
];

function rule(name: string, i: number): RuleView {
  return {
    name,
    mode: 'enforce',
    key: ['address'],
    lockout: false,
    perSecond: { admitted: 1234.5, refused: 99.5 },
    total: { admitted: 1_234_567 + i, refused: 89_012, 'shadow-refused': 0 },
    refusalRatio: 0.0672,
    failures: { open: 0, closed: 0, insurance: 0 },
    limits: [],
  };
}

const snapshot: Snapshot = {
  at: Date.UTC(2026, 11, 5, 13, 56, 43),
  policy: {
    hash: '33a87a66be627344',
    store: 'memory',
    loadedAt: null,
    ids: 'hmac',
    upstream: false,
    reload: { result: 'applied', at: 0 },
  },
  // More rules than 24 rows hold: the header must stay, the rest is counted.
  rules: [rule(LONG, 0), ...Array.from({ length: 29 }, (_, i) => rule(`rule-${i + 1}`, i + 1))],
  perSecond: { admitted: 1234.5, refused: 99.5 },
  refusalRatio: 0.0672,
  latency: { p50Ms: 0.04, p99Ms: 0.48, samples: 10 },
  recent: [],
};

const hasTmux = (() => {
  try {
    execFileSync('tmux', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

describe('sluice top in a terminal', { skip: hasTmux ? false : 'tmux is not installed' }, () => {
  const socket = `sluice-top-${process.pid}`;
  const tmux = (...args: string[]) =>
    execFileSync('tmux', ['-L', socket, '-f', '/dev/null', ...args], { encoding: 'utf8' });
  let feed: Server;
  let url: string;
  before(async () => {
    feed = createServer((req, res) => {
      if (req.url !== '/dashboard/events') return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`event: snapshot\ndata: ${JSON.stringify(snapshot)}\n\n`);
    });
    await new Promise<void>((resolve) => feed.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(feed.address() as AddressInfo).port}`;
  });
  after(async () => {
    try {
      tmux('kill-server');
    } catch {
      // Already gone.
    }
    feed.closeAllConnections();
    await new Promise((resolve) => feed.close(resolve));
  });

  /** The pane's lines once `ready` holds for them (at most 20 s). */
  async function screen(ready: (lines: string[]) => boolean): Promise<string[]> {
    const until = Date.now() + 20_000;
    let lines: string[] = [];
    while (Date.now() < until) {
      lines = tmux('capture-pane', '-p', '-t', 'top').split('\n');
      if (ready(lines)) return lines;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.fail(`the screen never got there:\n${lines.join('\n')}`);
  }

  const heading = (lines: string[]) => lines.find((l) => l.startsWith('RULE '));

  it('fits 80×24 with the header fixed, then redraws at the new size when the terminal is resized', async () => {
    const command = [process.execPath, '--import', 'tsx', bin, 'top', '--url', url]
      .map((part) => `'${part}'`)
      .join(' ');
    tmux('new-session', '-d', '-s', 'top', '-x', '80', '-y', '24', '-c', root, command);
    const small = await screen(
      (lines) => heading(lines) !== undefined && lines.some((l) => l.includes('more rules')),
    );
    assert.match(small[0]!, /^sluice top {2}13:56:43 UTC {2}store memory {2}policy 33a87a66be627344/);
    assert.ok(small.filter((l) => l !== '').length <= 24);
    for (const name of HEADINGS) assert.ok(heading(small)!.includes(name), `${name} on screen`);
    // Numbers whole, the name cut.
    const first = small.find((l) => l.startsWith('a-rule-with'))!;
    assert.match(
      first,
      /^a-rule-with[\w-]*… +1234\.5 +99\.5 +0\.0 +0\.0 +0\.0 +0\.0 +6\.7% 1234567\/89012\/0$/,
    );
    assert.ok(small.every((l) => l.length <= 80));
    assert.ok(small.some((l) => /^ {2}… \d+ more rules$/.test(l)));

    tmux('resize-window', '-t', 'top', '-x', '140', '-y', '40');
    const large = await screen((lines) => lines.some((l) => l.startsWith(`${LONG} `)));
    assert.match(large[0]!, /^sluice top /);
    assert.match(
      large.find((l) => l.startsWith(LONG))!,
      / 1234567\/89012\/0$/,
    );
    for (const name of HEADINGS) assert.ok(heading(large)!.includes(name), `${name} on screen`);
  });
});
