/**
 * The scan every server test's log goes through when its server stops (serve-support): it must
 * find a request value in a JSON log line, and not mistake a part of a longer token for one.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { leaks, requestValues } from './log-scan.js';

describe('the server log scan', () => {
  it('collects the addresses, header values (each list member) and keys of a decision body', () => {
    const values = requestValues({
      items: [
        { rule: 'login', key: 'apikey:42' },
        {
          request: {
            method: 'GET',
            path: '/x',
            address: '10.1.2.3',
            headers: { 'x-forwarded-for': '203.0.113.7, 10.0.0.1' },
          },
        },
      ],
    });
    for (const value of ['apikey:42', '10.1.2.3', '203.0.113.7', '10.0.0.1'])
      assert.ok(values.includes(value), value);
  });

  it('finds a value in a JSON line, as a whole token only, and leaves the human lines alone', () => {
    const output = [
      'sluice: serving on http://127.0.0.1:8411 for 203.0.113.7',
      '{"msg":"a decision failed","limit":"login","detail":"for 203.0.113.7"}',
      '{"msg":"announce","n":"203.0.113.77"}',
      '{"msg":"a peer","peer":"198.51.100.3:5000"}',
    ].join('\n');
    assert.equal(leaks(output, ['203.0.113.7']).length, 1);
    assert.equal(leaks(output, ['198.51.100.3']).length, 1);
    assert.deepEqual(leaks(output, ['ann', '127.0.0.1']), []);
    assert.deepEqual(leaks(output, ['203.0.113.7'], ['203.0.113.7']), []);
  });
});
