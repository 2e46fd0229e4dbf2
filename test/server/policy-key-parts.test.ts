/**
 * Key parts from a cookie, a query parameter and a JWT claim: verified (HS256, RS256, ES256,
 * against the server's clock) or read unverified when the policy says `verify: false`. A token
 * that is not valid has no claims, so its parts are absent (`!`), as a missing header is. Every
 * value is text of the key, stored as an HMAC under the policy's secret like any other part.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, generateKeyPairSync, sign } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { manualClock } from '../../src/core/clock.js';
import { MemoryStore } from '../../src/stores/memory/store.js';
import { compilePolicy, type CompiledPolicy } from '../../src/server/policy/compile.js';
import { PolicyError } from '../../src/server/policy/errors.js';
import { loadPolicyText } from '../../src/server/policy/load.js';
import type { RequestInput } from '../../src/server/policy/request.js';
import { decide } from '../../src/server/serve/decide.js';
import { SECRET, issuesOf } from './policy-support.js';

const JWT_SECRET = 'a jwt secret of at least 32 bytes!';
const start = Date.UTC(2026, 0, 15, 12);
const clock = manualClock(start);
const seconds = (ms: number) => Math.floor(ms / 1000);

const segment = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
function hs256(claims: object, secret = JWT_SECRET, alg = 'HS256'): string {
  const signed = `${segment({ alg, typ: 'JWT' })}.${segment(claims)}`;
  return `${signed}.${createHmac('sha256', secret).update(signed).digest('base64url')}`;
}

const dir = mkdtempSync(join(tmpdir(), 'sluice-jwt-'));
const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const ec = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
writeFileSync(join(dir, 'rsa.pem'), rsa.publicKey.export({ type: 'spki', format: 'pem' }));
writeFileSync(join(dir, 'ec.pem'), ec.publicKey.export({ type: 'spki', format: 'pem' }));
writeFileSync(join(dir, 'not-a-key.pem'), 'not a key');
function signed(alg: 'RS256' | 'ES256', claims: object): string {
  const text = `${segment({ alg })}.${segment(claims)}`;
  const key = alg === 'RS256' ? rsa.privateKey : { key: ec.privateKey, dsaEncoding: 'ieee-p1363' as const };
  return `${text}.${sign('sha256', Buffer.from(text), key).toString('base64url')}`;
}

const open: CompiledPolicy[] = [];
after(() => open.forEach((p) => p.close()));
function built(text: string, env: Record<string, string> = {}): CompiledPolicy {
  const policy = compilePolicy(loadPolicyText(text, { env, file: join(dir, 'sluice.yaml') }), {
    store: new MemoryStore(),
    clock,
  });
  open.push(policy);
  return policy;
}
const rule = (key: string, extra = '') => `rules:
  - name: r
    key: [${key}]
    algorithm: fixed-window
    limit: 1
    window: 1m
${extra}`;
const jwtPolicy = (verify: string, from = '') =>
  built(`version: 1\nclients: { jwt: { ${from}verify: ${verify} } }\n${rule('jwt:sub, jwt:org')}`, {
    JWT_SECRET,
  });
/** The key text of a request in the policy's first rule. */
const keyOf = (policy: CompiledPolicy, input: Partial<RequestInput>) =>
  policy.rules[0]!.keyText(policy.read({ method: 'GET', path: '/', address: '203.0.113.9', ...input }));
const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });

describe('cookie and query key parts', () => {
  const policy = built(`version: 1\n${rule('cookie:sid, query:api_key')}`);

  it('read the first cookie of the name as sent, and the first query value decoded', () => {
    const a = keyOf(policy, {
      path: '/x?api_key=k%201&api_key=k2',
      headers: { cookie: 'x=1; sid=abc; sid=z' },
    });
    assert.equal(a, keyOf(policy, { path: '/x?api_key=k+1', headers: { Cookie: 'sid=abc' } }));
    assert.notEqual(a, keyOf(policy, { path: '/x?api_key=k+1', headers: { cookie: 'sid=abd' } }));
    assert.notEqual(a, keyOf(policy, { path: '/x?api_key=k2', headers: { cookie: 'sid=abc' } }));
  });

  it('a missing cookie or parameter is a value of its own, apart from an empty one', () => {
    const missing = keyOf(policy, { path: '/x' });
    assert.equal(missing, keyOf(policy, { path: '/x?other=1', headers: { cookie: 'other=1' } }));
    assert.notEqual(missing, keyOf(policy, { path: '/x?api_key=', headers: { cookie: 'sid=' } }));
  });

  it('decides per value through the decision API', async () => {
    const item = (sid: string) => ({
      request: { method: 'GET', path: '/', address: '203.0.113.9', headers: { cookie: `sid=${sid}` } },
    });
    assert.equal((await decide(policy, item('one'))).status, 200);
    assert.equal((await decide(policy, item('one'))).status, 429);
    assert.equal((await decide(policy, item('two'))).status, 200);
  });
});

describe('jwt key parts, verified', () => {
  const policy = jwtPolicy('{ algorithm: HS256, secret: "${JWT_SECRET}" }');
  const valid = hs256({ sub: 'alice', org: 42, exp: seconds(start) + 60, nbf: seconds(start) - 60 });
  const absent = keyOf(policy, {});

  it('a valid token keys by its claims (a string or a number); a missing claim is absent', () => {
    const alice = keyOf(policy, bearer(valid));
    assert.notEqual(alice, absent);
    assert.equal(alice, keyOf(policy, bearer(hs256({ sub: 'alice', org: 42 }))));
    assert.notEqual(alice, keyOf(policy, bearer(hs256({ sub: 'alice', org: 43 }))));
    assert.notEqual(alice, keyOf(policy, bearer(hs256({ sub: 'alice' }))));
    assert.equal(keyOf(policy, bearer(hs256({ sub: { nested: 1 }, org: [1] }))), absent);
  });

  it('a token that is forged, of another algorithm, malformed or too long has no claims', () => {
    for (const token of [
      hs256({ sub: 'alice', org: 42 }, 'another secret of at least 32 bytes'),
      hs256({ sub: 'alice', org: 42 }, JWT_SECRET, 'HS512'),
      `${segment({ alg: 'none' })}.${segment({ sub: 'alice', org: 42 })}.`,
      'not.a.token',
      'a.b',
      `${valid}.extra`,
      `${valid.slice(0, -4)}AAAA`,
      hs256({ sub: 'alice', org: 42, pad: 'x'.repeat(9000) }),
    ])
      assert.equal(keyOf(policy, bearer(token)), absent, token.slice(0, 40));
  });

  it("exp and nbf are read by the server's clock: a token before nbf or from exp on has no claims", () => {
    const late = hs256({ sub: 'alice', org: 42, nbf: seconds(start) + 10 });
    assert.equal(keyOf(policy, bearer(late)), absent);
    assert.notEqual(keyOf(policy, bearer(valid)), absent);
    clock.advance('10s');
    assert.notEqual(keyOf(policy, bearer(late)), absent);
    clock.advance('50s');
    assert.equal(keyOf(policy, bearer(valid)), absent);
    assert.equal(keyOf(policy, bearer(hs256({ sub: 'alice', exp: 'never' }))), absent);
    clock.set(start);
  });

  it('RS256 and ES256 are checked with the PEM public key named relative to the policy file', () => {
    for (const alg of ['RS256', 'ES256'] as const) {
      const file = alg === 'RS256' ? 'rsa.pem' : 'ec.pem';
      const p = jwtPolicy(`{ algorithm: ${alg}, publicKeyFile: ${file} }`);
      const none = keyOf(p, {});
      const good = keyOf(p, bearer(signed(alg, { sub: 'bob', org: 'o' })));
      assert.notEqual(good, none, alg);
      assert.equal(
        keyOf(p, bearer(signed(alg === 'RS256' ? 'ES256' : 'RS256', { sub: 'bob', org: 'o' }))),
        none,
      );
      // HS256 signed with the public key's text as a secret: the classic confusion, refused.
      const pem = (alg === 'RS256' ? rsa : ec).publicKey.export({ type: 'spki', format: 'pem' }) as string;
      assert.equal(keyOf(p, bearer(hs256({ sub: 'bob', org: 'o' }, pem))), none);
    }
  });

  it('reads the token from another header or a cookie when from says so', () => {
    const fromCookie = jwtPolicy('{ algorithm: HS256, secret: "${JWT_SECRET}" }', 'from: cookie:session, ');
    assert.notEqual(
      keyOf(fromCookie, { headers: { cookie: `a=b; session=${valid}` } }),
      keyOf(fromCookie, {}),
    );
    assert.equal(keyOf(fromCookie, bearer(valid)), keyOf(fromCookie, {}));
    const fromHeader = jwtPolicy(
      '{ algorithm: HS256, secret: "${JWT_SECRET}" }',
      'from: header:X-Id-Token, ',
    );
    assert.notEqual(keyOf(fromHeader, { headers: { 'x-id-token': valid } }), keyOf(fromHeader, {}));
  });

  it('a key from a claim is stored as an HMAC under the secret, never as the claim', () => {
    const p = built(
      `version: 1\nclients: { pseudonymSecret: "${SECRET}", jwt: { verify: { algorithm: HS256, secret: "\${JWT_SECRET}" } } }\n${rule('jwt:sub')}`,
      { JWT_SECRET },
    );
    const text = keyOf(p, bearer(valid));
    const stored = p.keys.current(text);
    assert.match(stored, /^key:v1:/);
    assert.ok(!stored.includes('alice'));
  });
});

describe('jwt key parts, unverified', () => {
  it('verify: false reads the claims as written, signature or not, still in time', () => {
    const policy = jwtPolicy('false');
    const forged = `${segment({ alg: 'none' })}.${segment({ sub: 'eve', org: 1 })}.`;
    assert.notEqual(keyOf(policy, bearer(forged)), keyOf(policy, {}));
    assert.equal(
      keyOf(policy, bearer(forged)),
      keyOf(policy, bearer(hs256({ sub: 'eve', org: 1 }, 'any secret'))),
    );
    const expired = hs256({ sub: 'eve', org: 1, exp: seconds(start) - 1 });
    assert.equal(keyOf(policy, bearer(expired)), keyOf(policy, {}));
  });

  it('random tokens, cookies and queries never throw and key as absent or as a value', () => {
    const policy = built(
      `version: 1\nclients: { jwt: { verify: false } }\n${rule('jwt:sub, cookie:sid, query:k')}`,
    );
    const token = fc.oneof(
      fc.string({ maxLength: 80 }),
      fc
        .tuple(fc.string(), fc.string(), fc.string())
        .map((parts) => parts.map((p) => Buffer.from(p).toString('base64url')).join('.')),
      fc
        .jsonValue()
        .map(
          (claims) =>
            `${segment({ alg: 'none' })}.${Buffer.from(JSON.stringify(claims) ?? '').toString('base64url')}.`,
        ),
    );
    fc.assert(
      fc.property(token, fc.string({ maxLength: 40 }), fc.string({ maxLength: 40 }), (t, cookie, query) => {
        const text = keyOf(policy, { path: `/p?${query}`, headers: { authorization: t, cookie } });
        assert.equal(typeof text, 'string');
      }),
      { numRuns: 500 },
    );
  });
});

describe('jwt configuration errors', () => {
  const withJwt = (jwt: string) => {
    try {
      built(`version: 1\nclients: { jwt: ${jwt} }\n${rule('jwt:sub')}`, { JWT_SECRET: 'short' });
    } catch (error) {
      if (error instanceof PolicyError) return error.issues.map((i) => `${i.line}:${i.column}: ${i.message}`);
      throw error;
    }
    throw new Error('the policy was accepted');
  };

  it('a claim part without clients.jwt is an error at the part', () => {
    assert.deepEqual(issuesOf(`version: 1\n${rule('address, jwt:sub')}`), [
      '4:20: rules[0].key[1] reads a JWT claim: the policy needs clients.jwt (where tokens are and how they are checked)',
    ]);
  });

  it('verify left out or not false, a secret too short, a key missing or of the wrong type, at their place and without the secret', () => {
    const cases: [string, string][] = [
      ['{ from: header:authorization }', '2:17: clients.jwt needs "verify"'],
      [
        '{ verify: true }',
        '2:27: clients.jwt.verify must be false (claims read unverified) or { algorithm, secret or publicKeyFile }',
      ],
      [
        '{ verify: { algorithm: HS384, secret: x } }',
        '2:40: clients.jwt.verify.algorithm must be one of "HS256", "RS256" or "ES256"',
      ],
      ['{ from: query:t, verify: false }', '2:25: clients.jwt.from must be header:<name> or cookie:<name>'],
      [
        '{ verify: { algorithm: HS256, secret: "${JWT_SECRET}" } }',
        '2:55: clients.jwt.verify.secret (the value of ${JWT_SECRET}) must be at least 32 bytes',
      ],
      [
        '{ verify: { algorithm: RS256 } }',
        "2:27: clients.jwt.verify.publicKeyFile is required with RS256 (the issuer's PEM public key)",
      ],
      [
        '{ verify: { algorithm: RS256, publicKeyFile: not-a-key.pem } }',
        '2:62: clients.jwt.verify.publicKeyFile must be a readable PEM public key',
      ],
      [
        '{ verify: { algorithm: RS256, publicKeyFile: ec.pem } }',
        '2:62: clients.jwt.verify.publicKeyFile must be an RSA public key',
      ],
      [
        '{ verify: { algorithm: ES256, publicKeyFile: rsa.pem, secret: x } }',
        '2:79: clients.jwt.verify.secret is not read with ES256 (tokens are checked with publicKeyFile)',
      ],
    ];
    for (const [jwt, expected] of cases) assert.deepEqual(withJwt(jwt), [expected], jwt);
  });
});
