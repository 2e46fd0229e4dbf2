/** One Server-Sent Event: its name (`message` when the stream named none) and its data. */
export interface ServerSentEvent {
  event: string;
  data: string;
}

/**
 * The events of a text/event-stream body, as they arrive (comments and `retry:` lines skipped,
 * multi-line data joined by newlines, as the EventSource standard reads them).
 */
export async function* serverSentEvents(body: AsyncIterable<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const decoder = new TextDecoder();
  let pending = '';
  // A CR that ends a chunk may be the first half of a CRLF: it waits for the next chunk.
  let cr = '';
  for await (const chunk of body) {
    let text = cr + decoder.decode(chunk, { stream: true });
    cr = text.endsWith('\r') ? '\r' : '';
    if (cr !== '') text = text.slice(0, -1);
    pending += text.replace(/\r\n?/g, '\n');
    let end: number;
    while ((end = pending.indexOf('\n\n')) >= 0) {
      const block = pending.slice(0, end);
      pending = pending.slice(end + 2);
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') event = value;
        else if (field === 'data') data.push(value);
      }
      if (data.length > 0) yield { event, data: data.join('\n') };
    }
  }
}
