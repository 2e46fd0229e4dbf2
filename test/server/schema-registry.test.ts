/**
 * sluice.schema.json holds every rule of the registry, as scripts/policy-schema.ts writes it: an
 * options definition per algorithm and a branch per algorithm where a limit is written. A new
 * rule fails here until the script has been run.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ruleEntries } from '../../src/core/rules/index.js';
import { committedSchema, withRuleSchemas } from '../../scripts/policy-schema.js';

describe('sluice.schema.json and the rule registry', () => {
  it('is what scripts/policy-schema.ts writes from the registry', () => {
    const committed = committedSchema();
    assert.deepEqual(committed, withRuleSchemas(committed));
  });

  it('has a definition per algorithm, tagged by its kind, with the options its factory takes', () => {
    const defs = committedSchema().$defs as Record<string, { properties: Record<string, unknown> }>;
    for (const entry of ruleEntries) {
      const def = defs[entry.name];
      assert.ok(def !== undefined, entry.name);
      assert.deepEqual(def.properties.algorithm, { const: entry.kind });
      assert.deepEqual(Object.keys(def.properties), ['algorithm', ...entry.optionKeys]);
    }
  });

  it('writes a schema from one without algorithms', () => {
    const committed = committedSchema();
    const defs = { ...(committed.$defs as Record<string, unknown>) };
    for (const entry of ruleEntries) delete defs[entry.name];
    assert.deepEqual(withRuleSchemas({ ...committed, $defs: defs }), committed);
  });
});
