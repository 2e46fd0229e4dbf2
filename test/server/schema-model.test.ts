/**
 * sluice.schema.json and the TypeScript model agree: every object of the schema has exactly the
 * fields its type lists (the compiler checks the lists against the types), the enumerations
 * hold the same values, the schema is published, and the header styles are the library's.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { HEADER_STYLES } from '../../src/http/headers.js';
import { ruleEntries } from '../../src/core/rules/index.js';
import { algorithmFields, fileChoices, fileFields } from '../../src/server/policy/file-types.js';

const schema = JSON.parse(readFileSync(new URL('../../sluice.schema.json', import.meta.url), 'utf8'));
const defs = schema.$defs;
const keys = (properties: object) => Object.keys(properties).sort();
const fields = (list: object) => Object.keys(list).sort();

describe('sluice.schema.json and the model', () => {
  it('the top level and every object definition have the fields of their types', () => {
    assert.deepEqual(keys(schema.properties), fields(fileFields.policy));
    for (const name of [
      'block',
      'concurrency',
      'match',
      'headerAbsent',
      'ruleCommon',
      'clients',
      'jwt',
      'jwtVerify',
      'defaults',
      'auth',
      'envoy',
      'envoyDomain',
      'envoyDescriptor',
      'envoyRateLimit',
      'server',
      'admin',
      'tls',
      'upstreamRoute',
    ] as const)
      assert.deepEqual(keys(defs[name].properties), fields(fileFields[name]), name);
    for (const { name } of ruleEntries)
      assert.deepEqual(keys(defs[name].properties), fields(algorithmFields[name]!), name);
    assert.deepEqual(keys(defs.auth.properties.tokens.items.properties), fields(fileFields.token));
    const [memory, redis, postgres] = defs.store.oneOf;
    assert.deepEqual(keys(memory.properties), fields(fileFields.memoryStore));
    assert.deepEqual(keys(redis.properties), fields(fileFields.redisStore));
    assert.deepEqual(keys(postgres.properties), fields(fileFields.postgresStore));
  });

  it('every object is closed: additionalProperties or unevaluatedProperties false', () => {
    const open: string[] = [];
    const walk = (node: unknown, at: string, composed: boolean): void => {
      if (typeof node !== 'object' || node === null) return;
      const schemaNode = node as Record<string, unknown>;
      const closed = schemaNode.additionalProperties === false || schemaNode.unevaluatedProperties === false;
      // Definitions composed into a closed schema (allOf) are closed by it.
      if (schemaNode.properties !== undefined && !closed && !composed) open.push(at);
      for (const [key, value] of Object.entries(schemaNode)) {
        if (Array.isArray(value)) value.forEach((v, i) => walk(v, `${at}/${key}/${i}`, false));
        else walk(value, `${at}/${key}`, false);
      }
    };
    const composedDefs = new Set([...ruleEntries.map((e) => e.name), 'concurrency', 'ruleCommon']);
    walk({ ...schema, $defs: {} }, '#', false);
    for (const [name, def] of Object.entries(defs)) walk(def, `#/$defs/${name}`, composedDefs.has(name));
    assert.deepEqual(open, []);
    // The one map of free keys: header names to values, each a string or { absent: true }.
    assert.deepEqual(defs.match.properties.headers.additionalProperties.anyOf, [
      { type: 'string' },
      { $ref: '#/$defs/headerAbsent' },
    ]);
  });

  it("the enumerations are the model's: algorithms, failure, mode, scopes, proxy headers, store types, header styles", () => {
    assert.deepEqual(
      defs.limit.oneOf.map(
        (b: { properties: { algorithm: { const: string } } }) => b.properties.algorithm.const,
      ),
      fileChoices.algorithm,
    );
    // A rule of its own may also be a concurrency limit, which a limits list never holds.
    assert.deepEqual(
      defs.rule.else.oneOf.map(
        (b: { properties: { algorithm: { const: string } } }) => b.properties.algorithm.const,
      ),
      fileChoices.ruleAlgorithm,
    );
    assert.deepEqual(defs.failure.enum, fileChoices.failure);
    assert.deepEqual(defs.mode.enum, fileChoices.mode);
    assert.deepEqual(defs.auth.properties.tokens.items.properties.scopes.items.enum, fileChoices.scope);
    assert.deepEqual(defs.clients.properties.proxyHeader.enum, fileChoices.proxyHeader);
    assert.deepEqual(
      defs.store.oneOf.map((b: { properties: { type: { const: string } } }) => b.properties.type.const),
      fileChoices.storeType,
    );
    assert.deepEqual(defs.headers.enum, [...HEADER_STYLES]);
    assert.deepEqual(defs.jwtVerify.properties.algorithm.enum, fileChoices.jwtAlgorithm);
  });

  it('says that a burst defaults to the limit, unlike Traefik (1) and nginx (0)', () => {
    assert.match(
      defs.tokenBucket.properties.burst.description,
      /Default: the limit.*Traefik's default is 1, nginx's 0/,
    );
  });

  it('is published with the package', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    assert.ok(pkg.files.includes('sluice.schema.json'));
  });

  it('docs/server.md names every key of the file', () => {
    const doc = readFileSync(new URL('../../docs/server.md', import.meta.url), 'utf8');
    const unnamed = [...Object.values(fileFields), ...Object.values(algorithmFields)]
      .flatMap((list) => Object.keys(list))
      // Named in code: alone (`burst`) or in a snippet (`{ type: redis, url, timeout? }`).
      .filter((field) => !new RegExp(`\`[^\`\\n]*\\b${field}\\b[^\`\\n]*\``).test(doc));
    assert.deepEqual(unnamed, []);
  });
});
