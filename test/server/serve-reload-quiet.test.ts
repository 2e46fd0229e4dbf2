/**
 * A policy file's folder may hold other files that change all the time, the server's own log
 * among them: only a change of the policy file's text makes the server read it again, and a
 * rejected text is reported once, however often the folder changes after.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { logOf, replacePolicy, waitForLog } from './ops-support.js';
import { startSluice } from './serve-support.js';

const policy = (limit: string) => `version: 1
rules:
  - name: login
    match: { methods: [POST], paths: [/api/login] }
    key: [address]
    algorithm: token-bucket
    limit: ${limit}
    period: 1h
`;

describe('sluice serve: reloads of a policy in a busy folder', () => {
  it('other files changing beside an invalid policy do not reload it; its rejection is logged once', async () => {
    const sluice = await startSluice(policy('2'));
    try {
      const log = join(dirname(sluice.config), 'server.log');
      replacePolicy(sluice.config, policy('-2'));
      await waitForLog(sluice, 'reload-rejected', 1);
      // A log written beside the policy, each line longer apart than the reload's quiet time.
      for (let line = 0; line < 5; line++) {
        appendFileSync(log, `{"event":"reload-rejected","line":${line}}\n`);
        await sleep(150);
      }
      // Saved again with the same text: nothing new either.
      writeFileSync(sluice.config, policy('-2'));
      await sleep(150);
      // A valid text is read and served; whatever was going to happen before it has been logged.
      replacePolicy(sluice.config, policy('3'));
      await waitForLog(sluice, 'reload', 1);
      const events = logOf(sluice).map((entry) => entry.event);
      assert.equal(events.filter((event) => event === 'reload-rejected').length, 1);
      assert.equal(events.filter((event) => event === 'reload-rejected-again').length, 0);
      assert.equal(events.filter((event) => event === 'policy-error').length, 1);
    } finally {
      assert.equal(await sluice.stop(), 0);
    }
  });

  it('a signal on a text already rejected says so in one line, without its errors again', async () => {
    const sluice = await startSluice(policy('2'));
    try {
      replacePolicy(sluice.config, policy('-2'));
      await waitForLog(sluice, 'reload-rejected', 1);
      sluice.child.kill('SIGHUP');
      const [again] = await waitForLog(sluice, 'reload-rejected-again', 1);
      assert.equal(again!.trigger, 'signal');
      assert.equal(logOf(sluice).filter((entry) => entry.event === 'policy-error').length, 1);
    } finally {
      assert.equal(await sluice.stop(), 0);
    }
  });
});
