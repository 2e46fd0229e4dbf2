import { resetScript } from '../adjust-scripts.js';
import type { RedisClient } from '../client.js';

/**
 * A reset (see `resetScript`): deletes the bucket at `bucketKey` and writes its reset marker at
 * `markerKey`, living `horizonMs`, at the reset's time: on the app's clock `appNow` with
 * `slackMs` more TTL, else (`appNow` undefined) the server's. Sent at once, not through the
 * pipeline, and by EVAL, not EVALSHA: a reset is rare, and its script is short.
 */
export function sendReset(
  client: RedisClient,
  bucketKey: string,
  markerKey: string,
  horizonMs: number,
  appNow: number | undefined,
  slackMs: number,
): Promise<unknown> {
  const args = [String(horizonMs)];
  if (appNow !== undefined) args.push(String(appNow), String(slackMs));
  return client.eval(resetScript, [bucketKey, markerKey], args);
}
