import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { serverSentEvents, type ServerSentEvent } from '../../../src/server/top/sse.js';

/** `text` as chunks cut at the given places, as a network may deliver it. */
async function* chunked(text: string, cuts: number[]): AsyncGenerator<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let at = 0;
  for (const cut of [...cuts.map((c) => c % (bytes.length + 1))].sort((a, b) => a - b)) {
    yield bytes.slice(at, Math.max(at, cut));
    at = Math.max(at, cut);
  }
  yield bytes.slice(at);
}

async function parse(text: string, cuts: number[] = []): Promise<ServerSentEvent[]> {
  const found: ServerSentEvent[] = [];
  for await (const event of serverSentEvents(chunked(text, cuts))) found.push(event);
  return found;
}

const line = fc.string({ unit: fc.constantFrom('a', 'é', '€', '😀', ' ', ':', '{', '"', '1') });

describe('the Server-Sent Events reader of sluice top', () => {
  it('reads back any events however the stream is cut, multi-byte characters and all', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            event: fc.stringMatching(/^[a-z]{1,8}$/),
            data: fc.array(line, { minLength: 1, maxLength: 3 }),
          }),
          {
            maxLength: 6,
          },
        ),
        fc.array(fc.nat(), { maxLength: 8 }),
        fc.boolean(),
        async (events, cuts, crlf) => {
          const eol = crlf ? '\r\n' : '\n';
          const text =
            `retry: 2000${eol}${eol}: a comment${eol}${eol}` +
            events
              .map((e) => `event: ${e.event}${eol}${e.data.map((d) => `data: ${d}${eol}`).join('')}${eol}`)
              .join('');
          assert.deepEqual(
            await parse(text, cuts),
            events.map((e) => ({ event: e.event, data: e.data.join('\n') })),
          );
        },
      ),
    );
  });

  it('never throws on arbitrary bytes, and names an event without a name message', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string(), fc.array(fc.nat(), { maxLength: 4 }), async (text, cuts) => {
        for (const event of await parse(text, cuts)) assert.equal(typeof event.data, 'string');
      }),
    );
    assert.deepEqual(await parse('data:x\n\n'), [{ event: 'message', data: 'x' }]);
  });
});
