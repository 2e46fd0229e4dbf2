import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { abortableSleep } from '../../src/client/index.js';

describe('abortableSleep', () => {
  it('an abort ends a long wait at once with the signal reason', async () => {
    const controller = new AbortController();
    // A one-hour timer: the test would time out if the abort did not end it.
    const waiting = abortableSleep(3_600_000, controller.signal);
    controller.abort(new Error('cancelled by the user'));
    await assert.rejects(waiting, { message: 'cancelled by the user' });
  });

  it('an already aborted signal rejects without starting a timer', async () => {
    await assert.rejects(abortableSleep(3_600_000, AbortSignal.abort()), { name: 'AbortError' });
  });

  it('resolves after the delay when nothing aborts', async () => {
    const controller = new AbortController();
    await abortableSleep(0, controller.signal);
    assert.equal(controller.signal.aborted, false);
  });
});
