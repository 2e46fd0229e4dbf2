/**
 * The report API's buckets (examples/reports/README.md): one daily quota (10 a day, or an API key's own `daily_limit`), charged in
 * exactly one of three bucket families — a pseudonym of the request IP (anon), a pseudonym of
 * the account (session), or the API key's bucket (key). The store never sees a raw IP or user id.
 */
import {
  MemoryStore,
  calendarQuota,
  createClientAddress,
  createLimiter,
  createPseudonymRing,
  ipKey,
  type Clock,
  type Limiter,
} from '../../src/index.js';

/** 10 reports a day (UTC) for anon and session; an API key passes its own limit per call. */
export function reportQuota(clock: Clock): Limiter {
  return createLimiter({
    name: 'reports',
    rule: calendarQuota({ limit: 10 }),
    store: new MemoryStore(),
    clock,
  });
}

/**
 * Bucket names under AUTH_SECRET, current secret first. The account bucket is the policy's
 * `account:v1:<HMAC-SHA-256(AUTH_SECRET, "report:account:v1:<users.id>")>`; older secrets stay
 * in the ring so that an account's buckets of every generation can be erased.
 */
export function reportBuckets(authSecrets: readonly string[]) {
  const accounts = createPseudonymRing({
    secrets: authSecrets,
    purpose: 'report:account',
    prefix: 'account',
  });
  const ips = createPseudonymRing({ secrets: authSecrets, purpose: 'report:ip', prefix: 'ip' });
  return {
    accounts,
    /** The anonymous bucket: a pseudonym of the request IP (IPv6 by /64). */
    anon: (address: string | undefined) => ips.current(ipKey(address)),
    /** The API key's bucket: its row id, never the key itself. */
    apiKey: (id: number) => `apikey:${id}`,
  };
}

/** Behind a local proxy that appends X-Forwarded-For; read only from loopback peers. */
export const clientAddressOf = createClientAddress();
