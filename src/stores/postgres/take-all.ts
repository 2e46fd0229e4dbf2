import type { TimeSource } from '../shared/time-source.js';
import { takeAllLockout, type AlgorithmModule, type TakeAllFamily } from './algorithms/index.js';
import type { SchemaNames } from './schema-names.js';
import { statementClock } from './sql-clock.js';
import { statement, type Statement } from './statement.js';

/** Per kind, the arrays every entry sends before the kind's own: ord, rule, bucket, cost, limit. */
export const ENTRY_COMMON_ARRAYS = 5;

/**
 * All or nothing in one statement, for the kinds of one entry list (`modules`, in a fixed order:
 * the statement's parameters follow it). Every kind's entries arrive as arrays (ord, rule,
 * bucket, cost, limit, then the kind's own), become its family's rows, and each family (a table:
 * see take-all-family.ts) reads its rows, locks them in one order when every entry fits the
 * snapshot, decides again on the locked rows and writes only when every entry of every family
 * fits. Then the application's time (timeSource "app") and the time left. Answers one row per
 * entry: `ord` and the state before (its family's columns; the others NULL).
 *
 * Decided on the snapshot first: when some entry refuses there, the answer is that refusal (true
 * at the snapshot's instant) and nothing is locked, so refusals never queue on row locks.
 * Penalties do not apply: a refused all-or-nothing take charges nothing. With `lockouts` (some
 * entry's rule has one), an entry whose key is blocked refuses the group, and the array of each
 * entry's lockout memory follows the kinds' arrays (see `takeAllLockout`).
 */
export function takeAllStatement(
  modules: readonly AlgorithmModule[],
  names: SchemaNames,
  timeSource: TimeSource,
  lockouts: boolean,
): Statement {
  const sources = new Map<TakeAllFamily, string[]>();
  let param = 1;
  for (const module of modules) {
    const list = sources.get(module.family) ?? [];
    list.push(module.entrySource(param, names));
    sources.set(module.family, list);
    param += ENTRY_COMMON_ARRAYS + module.entryTypes.length;
  }
  // With lockouts, one more array: each entry's memory of a block by `ord` (NULL: no lockout).
  const forget = param;
  if (lockouts) param++;
  const { now, onTime } = statementClock(names.schema, timeSource, param);
  const families = [...sources.keys()];
  const entriesOf = (f: TakeAllFamily) => {
    const list = sources.get(f) as string[];
    return (lockouts ? list.map((source) => takeAllLockout.entries(source, forget)) : list).join(
      '\nUNION ALL\n',
    );
  };
  const fitsOf = (suffix: string) =>
    `SELECT COALESCE(bool_and(z.fits), true) AS ok FROM (${families.map((f) => `SELECT ${f.id}${suffix}.fits FROM ${f.id}${suffix}`).join(' UNION ALL ')}) z`;
  const extra: readonly string[] = lockouts ? takeAllLockout.outputs : [];
  const outputs = [...new Set(families.flatMap((f) => f.outputs)), ...extra];
  const answers = families.map((f) => {
    const own = [...f.output(), ...(lockouts ? takeAllLockout.output(`${f.id}d`) : [])];
    const named = [...f.outputs, ...extra];
    const columns = outputs.map((name) => {
      const at = named.indexOf(name);
      return `${at < 0 ? 'NULL::float8' : (own[at] as string)} AS ${name}`;
    });
    return `SELECT ${f.id}d.ord, ${columns.join(', ')} FROM c CROSS JOIN ${f.id}d WHERE c.on_time`;
  });
  return statement(`WITH n AS (SELECT ${now} AS now_ms),
${families.map((f) => `${f.id}e AS (${entriesOf(f)}),\n${f.snapshot(names, lockouts)}`).join(',\n')},
sok AS (${fitsOf('s')}),
${families.map((f) => f.decide(names, lockouts)).join(',\n')},
ok AS (${fitsOf('d')}),
${families.map((f) => f.write(names, lockouts)).join(',\n')},
-- Checked once, after every write (counting them runs them to the end), before any answer row.
c AS (SELECT ${onTime} AS on_time FROM (SELECT ${families.map((f) => `(SELECT count(*) FROM ${f.id}w)`).join(' + ')}) x)
${answers.join('\nUNION ALL\n')}`);
}
