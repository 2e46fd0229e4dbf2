/**
 * Writes the algorithms' part of sluice.schema.json from the rule registry
 * (src/core/rules/index.ts): one definition of each algorithm's options, and one branch per
 * algorithm in a rule's `limits` entries and in a rule that writes its limit in itself; then the
 * concurrency rule's (src/server/policy/concurrency.ts), a branch of a rule only. The rest of the
 * file is written by hand and kept as it is.
 *
 *   node --import tsx scripts/policy-schema.ts     rewrites sluice.schema.json
 *
 * A test (test/server/schema-registry.test.ts) holds the committed file to the registry, so a
 * new rule fails it until this has been run.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { format, resolveConfig } from 'prettier';
import { ruleEntries, type AnyRuleEntry } from '../src/core/rules/index.js';
import { CONCURRENCY, concurrencySchema } from '../src/server/policy/concurrency.js';

type Schema = Record<string, unknown>;

const ref = (name: string) => ({ $ref: `#/$defs/${name}` });
const tagged = (entry: AnyRuleEntry) => ({ const: entry.kind });

/** The definition of an algorithm's options: its tag, then what the registry says. */
function definition(entry: AnyRuleEntry): Schema {
  return {
    type: 'object',
    required: ['algorithm', ...entry.required],
    properties: { algorithm: tagged(entry), ...entry.properties },
  };
}

/** Whether a definition is one of the algorithms' (tagged by `algorithm`), of any registry. */
function isAlgorithm(def: unknown): boolean {
  const properties = (def as { properties?: { algorithm?: { const?: unknown } } }).properties;
  return typeof properties?.algorithm?.const === 'string';
}

/**
 * The schema with its algorithms' definitions and branches written from the registry: the
 * definitions after `count` (the shared ones they refer to come before), the branches in the
 * registry's order.
 */
export function withRuleSchemas(schema: Schema): Schema {
  const defs = schema.$defs as Record<string, Schema>;
  const rebuilt: Record<string, unknown> = {};
  for (const [name, def] of Object.entries(defs)) {
    if (isAlgorithm(def)) continue;
    rebuilt[name] = def;
    if (name !== 'count') continue;
    for (const entry of ruleEntries) rebuilt[entry.name] = definition(entry);
    rebuilt.concurrency = concurrencySchema;
  }
  rebuilt.limit = {
    ...defs.limit,
    oneOf: ruleEntries.map((entry) => ({
      allOf: [ref(entry.name)],
      properties: { algorithm: tagged(entry), name: ref('limitName') },
      unevaluatedProperties: false,
    })),
  };
  const rule = defs.rule as Schema & { else: Schema };
  rebuilt.rule = {
    ...rule,
    else: {
      ...rule.else,
      oneOf: [
        ...ruleEntries.map((entry) => ({
          allOf: [ref('ruleCommon'), ref(entry.name)],
          properties: { algorithm: tagged(entry) },
          unevaluatedProperties: false,
        })),
        // A concurrency limit is a rule of its own: never an entry of a `limits` list.
        {
          allOf: [ref('ruleCommon'), ref('concurrency')],
          properties: { algorithm: { const: CONCURRENCY } },
          unevaluatedProperties: false,
        },
      ],
    },
  };
  return { ...schema, $defs: rebuilt };
}

const file = fileURLToPath(new URL('../sluice.schema.json', import.meta.url));

/** The committed schema file, parsed. */
export function committedSchema(): Schema {
  return JSON.parse(readFileSync(file, 'utf8')) as Schema;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const text = JSON.stringify(withRuleSchemas(committedSchema()));
  const options = (await resolveConfig(file)) ?? {};
  writeFileSync(file, await format(text, { ...options, filepath: file }));
  console.log('wrote sluice.schema.json');
}
