import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  createPseudonymRing,
  ipKey,
  clientAddress,
  resolveIdentity,
  type ApiKeyGrant,
  type IdentityResolvers,
  type SessionInfo,
  type SubjectId,
} from '../../src/index.js';

interface FakeRequest {
  peer: string;
  headers: Record<string, string>;
  session?: SessionInfo | 'error' | null;
}

const accounts = createPseudonymRing({
  secrets: ['a'.repeat(32)],
  purpose: 'report:account',
  prefix: 'account',
});
const ips = createPseudonymRing({ secrets: ['i'.repeat(32)], purpose: 'report:ip', prefix: 'ip' });
const keys = new Map<string, ApiKeyGrant>([
  ['good-key', { bucket: 'apikey:17', limit: 500 }],
  ['old-key', { bucket: 'apikey:3', revoked: true }],
]);
const users = new Set<SubjectId>([1, 2]);

/** Resolvers over in-memory tables that record which of them ran. */
function resolvers(calls: string[]): IdentityResolvers<FakeRequest> {
  return {
    apiKey: async (key) => {
      calls.push('apiKey');
      return keys.get(key);
    },
    session: async (request) => {
      calls.push('session');
      if (request.session === 'error') throw new Error('session store down');
      return request.session;
    },
    userExists: async (id) => {
      calls.push('userExists');
      return users.has(id);
    },
    accountBucket: (id) => {
      calls.push('accountBucket');
      return accounts.current(id);
    },
    anonBucket: (request) => {
      calls.push('anonBucket');
      return ips.current(ipKey(clientAddress({ peer: request.peer, headers: request.headers }).address));
    },
  };
}

async function resolve(request: FakeRequest) {
  const calls: string[] = [];
  return { result: await resolveIdentity(request, resolvers(calls)), calls };
}

const office = '198.51.100.7';

describe("resolveIdentity: the report service's identity table (examples/reports/README.md)", () => {
  it('an anonymous request gets mode anon and its IP bucket', async () => {
    const { result, calls } = await resolve({ peer: office, headers: {} });
    assert.deepEqual(result, {
      ok: true,
      mode: 'anon',
      bucket: ips.current(office),
      limit: undefined,
      reason: 'no-session',
    });
    assert.deepEqual(calls, ['session', 'anonBucket']);
  });

  it('a valid session of an existing user gets mode session and the account bucket', async () => {
    const { result, calls } = await resolve({ peer: office, headers: {}, session: { userId: 1 } });
    assert.deepEqual(result, {
      ok: true,
      mode: 'session',
      bucket: accounts.current(1),
      limit: undefined,
      reason: 'session',
    });
    assert.deepEqual(calls, ['session', 'userExists', 'accountBucket']);
    assert.ok(result.ok && result.bucket.startsWith('account:v1:') && !result.bucket.includes(office));
  });

  it('two users behind one IP have separate buckets, and neither is the IP bucket', async () => {
    const one = await resolve({ peer: office, headers: {}, session: { userId: 1 } });
    const two = await resolve({ peer: office, headers: {}, session: { userId: 2 } });
    const anon = await resolve({ peer: office, headers: {} });
    const buckets = [one, two, anon].map(({ result }) => (result.ok ? result.bucket : ''));
    assert.equal(new Set(buckets).size, 3);
  });

  it('one user over several IPs keeps one bucket', async () => {
    const buckets = new Set<string>();
    for (const peer of ['198.51.100.7', '203.0.113.9', '2001:db8::1']) {
      const { result } = await resolve({ peer, headers: {}, session: { userId: 1 } });
      assert.ok(result.ok);
      buckets.add(result.bucket);
    }
    assert.deepEqual([...buckets], [accounts.current(1)]);
  });

  it('a valid API key gets mode key, its bucket and its limit, before any session', async () => {
    const offers: Record<string, string>[] = [
      { authorization: 'Bearer good-key' },
      { 'x-api-key': 'good-key' },
      { authorization: 'bearer  good-key' },
    ];
    for (const headers of offers) {
      const { result, calls } = await resolve({ peer: office, headers, session: { userId: 1 } });
      assert.deepEqual(result, { ok: true, mode: 'key', bucket: 'apikey:17', limit: 500, reason: 'key' });
      assert.deepEqual(calls, ['apiKey']);
    }
  });

  it('an invalid or revoked key is a 401 with no fallback to session or anon', async () => {
    const cases: [Record<string, string>, string][] = [
      [{ authorization: 'Bearer nope' }, 'invalid-key'],
      [{ 'x-api-key': 'old-key' }, 'revoked-key'],
      [{ authorization: 'Bearer' }, 'invalid-key'],
      [{ authorization: 'Bearer a b' }, 'invalid-key'],
      [{ 'x-api-key': '' }, 'invalid-key'],
      [{ authorization: 'Bearer good-key', 'x-api-key': 'other' }, 'conflicting-keys'],
    ];
    for (const [headers, reason] of cases) {
      const { result, calls } = await resolve({ peer: office, headers, session: { userId: 1 } });
      assert.equal(result.ok, false, JSON.stringify(headers));
      assert.ok(!result.ok && result.status === 401 && result.mode === 'key' && result.reason === reason);
      assert.ok(
        !result.ok && result.error.code === 'SLUICE_UNAUTHORIZED' && !result.error.message.includes('nope'),
      );
      assert.ok(!calls.includes('session') && !calls.includes('anonBucket'), calls.join());
    }
  });

  it('Basic authorization offers no API key; the session path decides', async () => {
    const { result } = await resolve({
      peer: office,
      headers: { authorization: 'Basic YTpi' },
      session: { userId: 2 },
    });
    assert.ok(result.ok && result.mode === 'session');
  });

  it('a session error falls back to anon and its IP bucket, never past the limit', async () => {
    const { result, calls } = await resolve({ peer: office, headers: {}, session: 'error' });
    assert.ok(result.ok && result.mode === 'anon' && result.reason === 'session-error');
    assert.ok(result.ok && result.bucket === ips.current(office) && result.cause instanceof Error);
    assert.deepEqual(calls, ['session', 'anonBucket']);
  });

  it('a deleted user or an incomplete session falls back to anon', async () => {
    const deleted = await resolve({ peer: office, headers: {}, session: { userId: 99 } });
    assert.ok(
      deleted.result.ok && deleted.result.mode === 'anon' && deleted.result.reason === 'deleted-user',
    );
    assert.ok(deleted.result.ok && deleted.result.bucket === ips.current(office));
    for (const session of [{}, { userId: null }, { userId: '' }, { userId: {} as never }]) {
      const { result, calls } = await resolve({ peer: office, headers: {}, session });
      assert.ok(result.ok && result.mode === 'anon' && result.reason === 'incomplete-session');
      assert.ok(!calls.includes('userExists') && !calls.includes('accountBucket'));
    }
  });

  it('a bucket-naming bug is an error, not a silent anonymous request', async () => {
    const calls: string[] = [];
    const broken = { ...resolvers(calls), accountBucket: () => '' };
    await assert.rejects(
      resolveIdentity({ peer: office, headers: {}, session: { userId: 1 } }, broken),
      (error: unknown) => (error as { code?: string }).code === 'SLUICE_KEY_MISSING',
    );
    const badLimit = { ...resolvers(calls), apiKey: () => ({ bucket: 'apikey:1', limit: 0 }) };
    await assert.rejects(
      resolveIdentity({ peer: office, headers: { 'x-api-key': 'k' } }, badLimit),
      (error: unknown) => (error as { code?: string }).code === 'SLUICE_ARGUMENT',
    );
  });
});
