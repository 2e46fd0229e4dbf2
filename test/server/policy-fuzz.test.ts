/**
 * The loader's only failure is a PolicyError, whatever the text: random YAML-like text (keys of
 * the schema, flow and block collections, quotes, anchors, ${…}) is loaded and built, and
 * anything thrown is a PolicyError whose issues all have a place.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MemoryStore } from '../../src/stores/memory/store.js';
import { compilePolicy } from '../../src/server/policy/compile.js';
import { PolicyError } from '../../src/server/policy/errors.js';
import { loadPolicyText } from '../../src/server/policy/load.js';

const words = [
  'version',
  'rules',
  'name',
  'algorithm',
  'token-bucket',
  'fixed-window',
  'calendar-quota',
  'sliding-window',
  'anchored-window',
  'limit',
  'limits',
  'period',
  'window',
  'burst',
  'block',
  'duration',
  'max',
  'factor',
  'store',
  'type',
  'redis',
  'memory',
  'url',
  'clients',
  'trustedProxies',
  'loopback',
  'match',
  'paths',
  'methods',
  'key',
  'address',
  'mode',
  'shadow',
  'auth',
  'tokens',
  'token',
  'scopes',
  'decide',
  '1',
  '0',
  '-1',
  '1h',
  '10m',
  '1x',
  '10.0.0.0/8',
  '::1',
  '${X}',
  '${UNSET}',
  '$${',
  '${',
  '&a',
  '*a',
  '!!str',
  '"',
  "'",
  ':',
  ': ',
  '- ',
  '[',
  ']',
  '{',
  '}',
  ',',
  '\n',
  '\n  ',
  '\n    ',
  '  ',
  '#',
  '|',
  '>',
  '?',
  '%',
  '@',
  '\t',
  '\u00e9',
  '\u0000',
  // The policy language's richer parts, and the characters that shield ${NAME} while parsing.
  'jwt',
  'from',
  'verify',
  'HS256',
  'RS256',
  'secret',
  'publicKeyFile',
  'cookie:sid',
  'query:k',
  'jwt:sub',
  'headers',
  'absent',
  'true',
  'false',
  'allow',
  'deny',
  'response',
  'status',
  'body',
  '\uE000',
  '\uE001',
];

const text = fc
  .array(fc.oneof(fc.constantFrom(...words), fc.string({ maxLength: 4 })), { maxLength: 60 })
  .map((parts) => parts.join(''));
const prefixed = text.map((rest) => `version: 1\nrules:\n  - ${rest}`);

function load(source: string): void {
  try {
    compilePolicy(loadPolicyText(source, { env: { X: '5' } }), { store: new MemoryStore() }).close();
  } catch (error) {
    if (!(error instanceof PolicyError)) throw error;
    assert.ok(error.issues.length > 0);
    for (const issue of error.issues) {
      assert.ok(Number.isInteger(issue.line) && issue.line >= 1);
      assert.ok(Number.isInteger(issue.column) && issue.column >= 1);
    }
  }
}

describe('policy loader fuzz', () => {
  it('random text is a policy or a PolicyError with placed issues, nothing else', () => {
    fc.assert(
      fc.property(text, (source) => load(source)),
      { numRuns: 400 },
    );
  });

  it('random rules after a valid start are a policy or a PolicyError with placed issues', () => {
    fc.assert(
      fc.property(prefixed, (source) => load(source)),
      { numRuns: 400 },
    );
  });
});
