import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import schema from '../../../sluice.schema.json' with { type: 'json' };
import { fileChoices } from './file-types.js';
import { pathText } from './errors.js';

/** One schema violation, before it is placed in the file. */
export interface SchemaProblem {
  /** Where: segments into the policy. */
  readonly path: readonly (string | number)[];
  /** True when the problem is the key itself (an unknown key), not its value. */
  readonly atKey: boolean;
  /** What is wrong, without `where` (the caller adds the place and any expansion). */
  readonly what: string;
}

// strictRequired is off because the schema's discriminators require their tag (`type`,
// `algorithm`) where the branches, not the parent, define it; every other strict check is on.
const ajv = new Ajv2020({ strict: true, strictRequired: false, allErrors: true, discriminator: true });
const validator = ajv.compile(schema);
const defs = schema.$defs;

/** The JSON Schema of policy files (sluice.schema.json). */
export const policySchema: unknown = schema;

/** Validates a parsed policy against `sluice.schema.json`; an empty list when it conforms. */
export function schemaProblems(data: unknown): SchemaProblem[] {
  if (validator(data)) return [];
  const problems: SchemaProblem[] = [];
  const seen = new Set<string>();
  const errors = validator.errors ?? [];
  const missing = new Set(
    errors.filter((e) => e.keyword === 'required').map((e) => `${e.instancePath}/${missingOf(e)}`),
  );
  for (const error of errors) {
    const problem = describe(error, missing, data);
    if (problem === undefined) continue;
    const id = `${pathText(problem.path)}|${problem.what}`;
    if (seen.has(id)) continue;
    seen.add(id);
    problems.push(problem);
  }
  return problems;
}

function missingOf(error: ErrorObject): string {
  return String((error.params as { missingProperty?: string }).missingProperty);
}

const algorithms = quoted(fileChoices.algorithm);
const ruleAlgorithms = quoted(fileChoices.ruleAlgorithm);
const isRulePointer = (pointer: string) => /^\/rules\/\d+$/.test(pointer);

function describe(
  error: ErrorObject,
  missing: ReadonlySet<string>,
  data: unknown,
): SchemaProblem | undefined {
  // The branches of a header's value are said once, by the anyOf that holds them.
  if (
    error.schemaPath.startsWith(`${headerValue}/`) ||
    error.schemaPath.startsWith('#/$defs/headerAbsent/') ||
    error.schemaPath.startsWith(`${jwtVerifyValue}/0/`) ||
    error.schemaPath === '#/$defs/jwtVerify/type'
  )
    return undefined;
  const path = segments(error.instancePath);
  const params = error.params as Record<string, unknown>;
  const is = (what: string): SchemaProblem => ({ path, atKey: false, what });
  switch (error.keyword) {
    case 'anyOf':
      if (error.schemaPath === headerValue)
        return is(`must be a header value ("*" for any) or { absent: true }`);
      // A mapping's own errors say what is wrong with it.
      if (error.schemaPath === jwtVerifyValue && !isMapping(valueAt(data, path)))
        return is('must be false (claims read unverified) or { algorithm, secret or publicKeyFile }');
      return undefined;
    case 'if':
    case 'oneOf':
      // The branch's own errors say what is wrong; "must match the else schema" says nothing.
      return undefined;
    case 'additionalProperties':
    case 'unevaluatedProperties': {
      const key = String(params.additionalProperty ?? params.unevaluatedProperty);
      return { path: [...path, key], atKey: true, what: `has an unknown key ${JSON.stringify(key)}` };
    }
    case 'required': {
      const key = missingOf(error);
      if (key === 'algorithm' && isRulePointer(error.instancePath))
        return is(`needs an algorithm (${ruleAlgorithms}) or a list of limits`);
      return is(`needs ${JSON.stringify(key)}`);
    }
    case 'discriminator': {
      const tag = String(params.tag);
      if (params.error === 'tag') {
        // A missing tag is reported by `required` already.
        if (missing.has(`${error.instancePath}/${tag}`)) return undefined;
        return { path: [...path, tag], atKey: false, what: 'must be a string' };
      }
      const at = [...path, tag];
      if (tag === 'type')
        return { path: at, atKey: false, what: `must be one of ${quoted(fileChoices.storeType)}` };
      if (isRulePointer(error.instancePath))
        return { path: at, atKey: false, what: `must be one of ${ruleAlgorithms}` };
      // A concurrency limit holds a slot for the whole request: it is a rule of its own.
      if (valueAt(data, at) === 'concurrency')
        return {
          path: at,
          atKey: false,
          what: 'cannot be concurrency in a limits list: write a concurrency limit as a rule of its own',
        };
      return { path: at, atKey: false, what: `must be one of ${algorithms}` };
    }
    case 'type':
      if (error.schemaPath === durationType) return is(durationHint(valueAt(data, path)));
      return is(`must be ${typeNames[String(params.type)] ?? String(params.type)}`);
    case 'const':
      return is(`must be ${JSON.stringify(params.allowedValue)}`);
    case 'enum':
      return is(`must be one of ${quoted(params.allowedValues as readonly unknown[])}`);
    case 'pattern':
      return is(`must be ${patternNames.get(String(params.pattern)) ?? 'of the documented form'}`);
    case 'propertyNames':
      return {
        path: [...path, String(params.propertyName)],
        atKey: true,
        what: "has a key that is not a header name (letters, digits and !#$%&'*+.^_`|~-)",
      };
    case 'minItems':
      return is(`must have at least ${String(params.limit)} ${params.limit === 1 ? 'entry' : 'entries'}`);
    case 'minimum':
      return is(`must be at least ${String(params.limit)}`);
    case 'maximum':
      return is(`must be at most ${String(params.limit)}`);
    case 'minLength':
      return is(
        params.limit === 1 ? 'must not be empty' : `must be at least ${String(params.limit)} characters`,
      );
    case 'uniqueItems':
      return is('lists an entry twice');
    default:
      return is(error.message ?? 'is not valid');
  }
}

const durationType = '#/$defs/duration/type';
/** Where the match's header values are (a `$ref` starts schema paths afresh at its target). */
const headerValue = '#/properties/headers/additionalProperties/anyOf';
const jwtVerifyValue = '#/properties/verify/anyOf';

function isMapping(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A duration written as a bare number (`period: 60`) is the likeliest slip: say which string to
 * write, as the library's own duration check does. The number was written in the file itself (a
 * value read from the environment is always a string), so repeating it shows no secret.
 */
function durationHint(value: unknown): string {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0)
    return 'must be a duration string such as "10m": a whole number with ms, s, m, h or d';
  return `must be a duration string with a unit: "${value}s" for seconds, "${value}ms" for milliseconds (a bare number has no unit)`;
}

function valueAt(data: unknown, path: readonly (string | number)[]): unknown {
  let at = data;
  for (const segment of path) at = (at as Record<string | number, unknown> | undefined)?.[segment];
  return at;
}

/** `/rules/0/limit` → ['rules', 0, 'limit']. */
function segments(pointer: string): (string | number)[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^(0|[1-9][0-9]*)$/.test(s) ? Number(s) : s));
}

/** What each pattern of the schema stands for, by the `$defs` entry (or property) it is in. */
const patternNames = new Map<string, string>([
  [defs.duration.pattern, 'a duration such as "10m": a whole number with ms, s, m, h or d'],
  [
    defs.key.items.pattern,
    'address, method, path, route, host, header:<name>, cookie:<name>, query:<name>, jwt:<claim> or literal:<text>',
  ],
  [defs.jwt.properties.from.pattern, 'header:<name> or cookie:<name>'],
  [defs.response.properties.contentType.pattern, 'a media type such as "text/plain; charset=utf-8"'],
  [
    defs.ruleCommon.properties.name.pattern,
    'letters, digits, ".", "_" and "-", starting with a letter or digit, at most 64',
  ],
  [
    defs.limitName.pattern,
    'letters, digits, ".", "_", ":" and "-", starting with a letter or digit, at most 100',
  ],
  [defs.match.properties.methods.items.pattern, 'an HTTP method in capitals, such as "POST"'],
  [defs.match.properties.paths.items.pattern, 'a path starting with "/"'],
  [defs.match.properties.exceptPaths.items.pattern, 'a path starting with "/"'],
  [
    schema.properties.upstream.pattern,
    'an http:// or https:// URL without credentials, query or fragment, such as "http://127.0.0.1:3000"',
  ],
]);

const typeNames: Record<string, string> = {
  integer: 'a whole number',
  number: 'a number',
  string: 'a string',
  boolean: 'true or false',
  object: 'a mapping',
  array: 'a list',
};

function quoted(values: readonly unknown[]): string {
  const texts = values.map((v) => JSON.stringify(v));
  return texts.length < 2 ? texts.join('') : `${texts.slice(0, -1).join(', ')} or ${texts.at(-1)}`;
}
