/**
 * A server on the memory store without a pseudonym secret stores HMACs of its keys under a
 * secret it draws at start, never the text of an address or a header value; the secret stays
 * the same across reloads, so kept buckets keep their keys. On a shared store the keys are the
 * text (the start warns), and a policy's own secret always wins.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { loadPolicyText } from '../../src/server/policy/load.js';
import { LivePolicy } from '../../src/server/serve/live-policy.js';
import { createServerLog } from '../../src/server/serve/log.js';
import { ServerMetrics } from '../../src/server/serve/metrics.js';
import { openStore, type OpenedStore } from '../../src/server/serve/store.js';
import { MemoryStore } from '../../src/stores/memory/store.js';
import { SECRET } from './policy-support.js';

const rules = 'rules:\n  - { name: api, key: [address], algorithm: token-bucket, limit: 5, period: 1m }\n';

function live(text: string, opened: OpenedStore): LivePolicy {
  const config = join(mkdtempSync(join(tmpdir(), 'sluice-keys-')), 'sluice.yaml');
  writeFileSync(config, text);
  const sink = new Writable({ write: (_chunk, _encoding, done) => done() });
  return LivePolicy.start(
    {
      config,
      env: {},
      opened,
      log: createServerLog(sink),
      metrics: new ServerMetrics(),
      tokensRequired: false,
    },
    loadPolicyText(text, { file: config }),
    text,
  );
}

describe('keys the server stores', () => {
  it('on memory without a secret: HMACs under a secret drawn at start, the same after a reload', async () => {
    const policy = live(`version: 1\n${rules}`, await openStore({ type: 'memory' }));
    try {
      const keys = () => policy.current().compiled.keys;
      const stored = keys().current('203.0.113.7');
      assert.match(stored, /^key:v1:/);
      assert.ok(!stored.includes('203.0.113.7'));
      assert.equal(await policy.reload('signal'), true);
      assert.equal(keys().current('203.0.113.7'), stored, 'a reload keeps the keys');
      const other = live(`version: 1\n${rules}`, await openStore({ type: 'memory' }));
      assert.notEqual(
        other.current().compiled.keys.current('203.0.113.7'),
        stored,
        'each start draws its own',
      );
      other.close();
    } finally {
      policy.close();
    }
  });

  it("a policy's own secret wins; a shared store without one gets the text", async () => {
    const withSecret = live(
      `version: 1\nclients: { pseudonymSecret: "${SECRET}" }\n${rules}`,
      await openStore({ type: 'memory' }),
    );
    const again = live(
      `version: 1\nclients: { pseudonymSecret: "${SECRET}" }\n${rules}`,
      await openStore({ type: 'memory' }),
    );
    assert.equal(
      withSecret.current().compiled.keys.current('203.0.113.7'),
      again.current().compiled.keys.current('203.0.113.7'),
    );
    withSecret.close();
    again.close();
    // A shared store: several servers must agree on a key, so none draws a secret of its own.
    const shared: OpenedStore = {
      store: new MemoryStore(),
      type: 'redis',
      view: () => new MemoryStore(),
      ready: async () => true,
      close: async () => {},
    };
    const plain = live(`version: 1\n${rules}`, shared);
    assert.equal(plain.current().compiled.keys.current('203.0.113.7'), '203.0.113.7');
    plain.close();
  });
});
