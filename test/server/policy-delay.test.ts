/**
 * `mode: delay` in a policy: a request over the limit waits for its slot, up to the rule's
 * maxWait, and is admitted then; one whose slot is further away is refused at once. In the
 * decision API the server waits and answers 200 when the slot comes.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decide } from '../../src/server/serve/decide.js';
import { compiled, issuesOf } from './policy-support.js';

const policy = compiled(`version: 1
rules:
  - name: paced
    mode: delay
    maxWait: 250ms
    algorithm: token-bucket
    limit: 1
    period: 200ms
    burst: 1
`);
after(() => policy.close());

const item = { request: { method: 'GET', path: '/', address: '198.51.100.7' } };

describe('a rule of mode: delay', () => {
  it('holds a request within maxWait and admits it; refuses at once one whose slot is further', async () => {
    assert.equal((await decide(policy, item)).status, 200);
    // The second waits for the next slot (200 ms away); the third's (400 ms) is past maxWait.
    const [second, third] = await Promise.all([decide(policy, item), decide(policy, item)]);
    assert.equal(second.status, 200);
    assert.equal(third.status, 429);
    assert.deepEqual(third.refusedBy, ['paced']);
    assert.equal(policy.rules[0]!.guard.delays, true);
  });

  it('needs maxWait, maxWait needs it, and it takes what the library can hold a request for', () => {
    const rule = (extra: string, algorithm = 'algorithm: token-bucket\n    limit: 1\n    period: 1s') =>
      `version: 1\nrules:\n  - name: r\n    ${extra}\n    ${algorithm}\n`;
    assert.deepEqual(issuesOf(rule('mode: delay')), [
      '4:11: rules[0].mode delay needs maxWait: the longest a request waits',
    ]);
    assert.deepEqual(issuesOf(rule('maxWait: 1s')), ['4:14: rules[0].maxWait is read only with mode: delay']);
    const [window] = issuesOf(
      rule('mode: delay\n    maxWait: 1s', 'algorithm: fixed-window\n    limit: 1\n    window: 1s'),
    );
    assert.match(
      window!,
      /^3:5: rules\[0\] is not accepted: waiting for a slot .* needs a token bucket without a lockout/,
    );
  });
});
