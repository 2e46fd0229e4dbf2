/** Reads the dashboard's Server-Sent Events over real HTTP, with bounded waits. */
import type { Snapshot } from '../../../src/server/dashboard/snapshot-types.js';
import { serverSentEvents } from '../../../src/server/top/sse.js';

export interface FeedReading {
  /** Every byte the stream carried (to search for values that must not be there). */
  text: string;
  snapshot: Snapshot;
}

/**
 * Opens /dashboard/events and reads until a snapshot satisfies `until` (at most `ms`); the
 * stream is closed either way. Throws when the stream does not open or no snapshot satisfies.
 */
export async function readFeed(
  url: string,
  until: (snapshot: Snapshot) => boolean,
  headers: Record<string, string> = {},
  ms = 10_000,
): Promise<FeedReading> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), ms);
  let text = '';
  try {
    const response = await fetch(`${url}/dashboard/events`, { headers, signal: controller.signal });
    if (response.status !== 200) throw new Error(`the feed answered ${response.status}`);
    const body = response.body as unknown as AsyncIterable<Uint8Array>;
    // Every byte is kept, to search for values that must not be there.
    const decoder = new TextDecoder();
    const recorded = (async function* () {
      for await (const chunk of body) {
        text += decoder.decode(chunk, { stream: true });
        yield chunk;
      }
    })();
    for await (const { event, data } of serverSentEvents(recorded)) {
      if (event !== 'snapshot') continue;
      const snapshot = JSON.parse(data) as Snapshot;
      if (until(snapshot)) return { text, snapshot };
    }
    throw new Error('the feed ended');
  } catch (error) {
    if (controller.signal.aborted)
      throw new Error(`no snapshot as awaited within ${ms} ms:\n${text.slice(-6000)}`);
    throw error;
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}

/** A rule's total of one outcome in a snapshot. */
export function totalOf(snapshot: Snapshot, rule: string, outcome: keyof Snapshot['perSecond']): number {
  return snapshot.rules.find((r) => r.name === rule)?.total[outcome] ?? 0;
}
