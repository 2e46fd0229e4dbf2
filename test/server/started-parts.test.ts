/**
 * The server's start-up steps: a step that fails stops every part started before it, the last
 * started first, and stopping the server stops each part once.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { StartedParts } from '../../src/server/serve/started-parts.js';

describe('the parts of a server starting', () => {
  it('a failed step stops what started before it, last first, and throws its error as mapped', async () => {
    const stopped: string[] = [];
    const parts = new StartedParts();
    parts.add(() => stopped.push('echo'));
    parts.add(async () => {
      await Promise.resolve();
      stopped.push('store');
    });
    assert.equal(await parts.attempt(() => 7), 7);
    const failed = await parts
      .attempt(
        () => Promise.reject(new Error('EADDRINUSE')),
        () => new Error('cannot listen'),
      )
      .then(
        () => assert.fail('started'),
        (error: Error) => error.message,
      );
    assert.equal(failed, 'cannot listen');
    assert.deepEqual(stopped, ['store', 'echo']);
    await parts.stopAll();
    assert.deepEqual(stopped, ['store', 'echo']);
  });
});
