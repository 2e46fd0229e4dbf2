import type { ServerResponse } from 'node:http';
import type { Offenders } from './offenders.js';
import type { SnapshotMaker } from './snapshot.js';
import type { Point } from './snapshot-types.js';

/** Points of history a new subscriber gets: two minutes at a tick a second. */
const HISTORY = 120;
/** Open streams at most: each costs a socket and a write a second. */
const MAX_SUBSCRIBERS = 32;
/** A subscriber that has not read this much is dropped (its browser reconnects). */
const MAX_UNREAD_BYTES = 1 << 20;

/**
 * The dashboard's Server-Sent Events: one snapshot made and serialized per tick, whoever listens,
 * and the same text written to every subscriber. A new subscriber first gets the history of the
 * charts, then the latest snapshot, so the page is full at once.
 */
export class DashboardFeed {
  private readonly subscribers = new Set<ServerResponse>();
  private readonly history: Point[] = [];
  private latest: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private making = false;

  constructor(
    private readonly maker: SnapshotMaker,
    private readonly offenders: Offenders,
    private readonly intervalMs = 1000,
  ) {}

  /** Starts ticking (the timer never keeps the process alive). */
  start(): void {
    void this.tick();
    this.timer = setInterval(() => void this.tick(), this.intervalMs);
    this.timer.unref();
  }

  /** Streams to `res` until the client leaves; false when too many are open already. */
  subscribe(res: ServerResponse): boolean {
    if (this.subscribers.size >= MAX_SUBSCRIBERS) return false;
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
      // A buffering proxy in front would hold the events back.
      'X-Accel-Buffering': 'no',
    });
    res.write(`retry: 2000\n\nevent: history\ndata: ${JSON.stringify(this.history)}\n\n`);
    if (this.latest !== undefined) res.write(this.latest);
    this.subscribers.add(res);
    // The response's close, not the request's: a request without a body closes once it is read.
    const leave = () => this.subscribers.delete(res);
    res.on('close', leave);
    res.on('error', leave);
    return true;
  }

  /** Subscribers now. */
  get size(): number {
    return this.subscribers.size;
  }

  /** Stops ticking and ends every stream (a stream would keep a closing server open). */
  close(): void {
    clearInterval(this.timer);
    for (const res of this.subscribers) res.end();
    this.subscribers.clear();
  }

  private async tick(): Promise<void> {
    if (this.making) return;
    this.making = true;
    try {
      this.offenders.tick();
      const { snapshot, point } = await this.maker.make();
      this.history.push(point);
      if (this.history.length > HISTORY) this.history.shift();
      this.latest = `event: snapshot\ndata: ${JSON.stringify(snapshot)}\n\n`;
      for (const res of this.subscribers) {
        if (res.writableLength > MAX_UNREAD_BYTES) res.destroy();
        else res.write(this.latest);
      }
    } catch {
      // A snapshot that could not be made is skipped: the next tick makes a whole one.
    } finally {
      this.making = false;
    }
  }
}
