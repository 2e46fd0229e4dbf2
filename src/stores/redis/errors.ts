import { SluiceError } from '../../core/errors.js';
import { deadlineError } from '../shared/deadline.js';
import {
  connectionFailure,
  driverError,
  type DriverErrorRules,
  type DriverFailure,
} from '../shared/driver-error.js';

/** What the store's timeouts name: the store and the option that bounds it. */
export const TIMEOUT_SUBJECT = 'Redis (RedisStore timeout)';

/**
 * How the Redis store reads its clients' errors: the code of a reply error is the first word of
 * its message (`NOSCRIPT`, `OOM`, `READONLY`, `BUSY`, …; ioredis and node-redis alike), and a
 * network error carries a Node system code (`ECONNRESET`). Every one of them means Redis could
 * not decide: `SLUICE_STORE_UNAVAILABLE`, with the code and never the text (a client may quote
 * the command, whose arguments hold keys and costs). The input of a call cannot cause a Redis
 * error: the store checks it before sending (calls/take-arguments.ts).
 */
export const redisErrors: DriverErrorRules = {
  store: 'Redis',
  codeName: 'code',
  codeOf(error: unknown): string | undefined {
    const reply = redisErrorCode(error);
    if (reply !== undefined) return reply;
    const system = (error as { code?: unknown } | null)?.code;
    return typeof system === 'string' ? system : undefined;
  },
  classify: (code) =>
    code === 'WRONGPASS' || code === 'NOAUTH'
      ? {
          code: 'SLUICE_STORE_UNAVAILABLE',
          says: 'unavailable: authentication failed',
          hint: 'check the user and password of the connection settings',
        }
      : connectionFailure(code),
};

/** A client's error as a coded error of the Redis store (see {@link redisErrors}). */
export function storeError(error: unknown): DriverFailure {
  return driverError(error, redisErrors);
}

/** The Redis error prefix of a reply error (its first word, upper case), if there is one. */
export function redisErrorCode(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  const match = /^([A-Z][A-Z_]{1,30})(?:\s|$)/.exec(error.message);
  return match === null ? undefined : match[1];
}

/** SLUICE_STORE_UNAVAILABLE for a reason of the store's own (never a key or a client's text). */
export function unavailable(what: string): SluiceError {
  return new SluiceError('SLUICE_STORE_UNAVAILABLE', `Redis ${what}`);
}

/** SLUICE_STORE_TIMEOUT: Redis did not answer within the store's timeout. */
export function timedOut(timeoutMs: number): SluiceError {
  return deadlineError(TIMEOUT_SUBJECT, timeoutMs);
}

/**
 * SLUICE_STORE_TIMEOUT for a request refused because the queue is full of decisions of calls
 * that timed out, still held by the client: Redis is not answering.
 */
export function heldByClient(timeoutMs: number, abandoned: number, maxPending: number): SluiceError {
  return new SluiceError(
    'SLUICE_STORE_TIMEOUT',
    `Redis did not answer within ${timeoutMs} ms; ${abandoned} decisions of calls that timed out are still held by the client (maxPending ${maxPending})`,
  );
}

/** SLUICE_STORE_OVERLOADED for a request refused because `pending` decisions fill the queue. */
export function overloaded(pending: number, maxPending: number): SluiceError {
  return new SluiceError(
    'SLUICE_STORE_OVERLOADED',
    `Redis store has ${pending} decisions waiting or in flight (maxPending ${maxPending})`,
  );
}

/**
 * SLUICE_STORE_OVERLOADED for a decision whose time ran out while Redis kept answering: it only
 * waited behind others, which is load, not a failure.
 */
export function waitedBehindLoad(timeoutMs: number): SluiceError {
  return new SluiceError(
    'SLUICE_STORE_OVERLOADED',
    `Redis kept answering, but this decision waited in the store's queue or pipeline longer than its timeout (${timeoutMs} ms): load, not a failure`,
  );
}
