/**
 * The chat service's four rules and its proxy trust, in one place: these lines are the policy
 * (examples/chat/README.md says why each number is what it is). Where the policy names no burst,
 * the burst equals the limit ("5 per hour → burst 5"): a period earns exactly the limit, and it
 * may be spent at once. Messages keep their own burst of 10.
 */
import {
  LOOPBACK,
  MemoryStore,
  createCascade,
  createClientAddress,
  createLimiter,
  tokenBucket,
  type Clock,
} from '../../src/index.js';

export function chatLimits(clock: Clock) {
  // Generational and bounded: at most 2 × 4096 buckets per rule, however many addresses come.
  // No rule remembers its forgotten buckets (`rememberForgotten`): a flood of other keys never
  // refuses a new client. The reset a flood allows is bounded by the cascade instead: login-ip
  // comes before login, so every throwaway nick an address tries costs from its own 30 per 10
  // minutes, and flooding the per-address rule needs the addresses that each have a budget anyway.
  const store = new MemoryStore();
  const limit = (name: string, rule: ReturnType<typeof tokenBucket>) =>
    createLimiter({ name, rule, store, clock });
  return {
    /** 5 per hour per IP, burst 5. */
    registration: limit('registration', tokenBucket({ limit: 5, period: '1h' })),
    /**
     * Login, wide to narrow: 30 per 10 minutes per IP, then 10 per 10 minutes per IP + nick.
     * The per-IP limit comes first so that one address cannot mint throwaway nicks without end:
     * every nick it tries costs it a login from its own budget, and a refusal there charges
     * nothing further down (the first refusal stops the cascade).
     */
    login: createCascade([
      limit('login-ip', tokenBucket({ limit: 30, period: '10m' })),
      limit('login', tokenBucket({ limit: 10, period: '10m' })),
    ]),
    /** 30 per minute per user, burst 10: its own rule, outside the general budget. */
    messages: limit('messages', tokenBucket({ limit: 30, period: '1m', burst: 10 })),
    /** Every other mutating non-public route, POST /api/ack included: 60 per minute per user. */
    mutations: limit('mutations', tokenBucket({ limit: 60, period: '1m' })),
  };
}

export type ChatLimits = ReturnType<typeof chatLimits>;

/**
 * nginx writes `X-Real-IP $remote_addr`. It is read from any loopback peer — 127.0.0.0/8 and
 * ::1 — because nginx may reach us over IPv6 loopback too; trusting 127.0.0.1 alone would put
 * every client behind such an nginx into one bucket. From any other peer the header is not read
 * at all and the connection's address is the key.
 */
export const clientAddressOf = createClientAddress({ trustedProxies: LOOPBACK, header: 'x-real-ip' });
