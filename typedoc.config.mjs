// The API reference: one page set for every library entry of scripts/entries.mjs.
import { libraryEntries } from './scripts/entries.mjs';

/** @type {Partial<import('typedoc').TypeDocOptions>} */
export default {
  entryPoints: Object.values(libraryEntries),
  name: 'sluice',
  tsconfig: 'tsconfig.api.json',
  out: 'api-reference',
  readme: 'none',
  disableSources: true,
  skipErrorChecking: true,
  treatWarningsAsErrors: true,
  validation: {
    invalidLink: true,
    notExported: true,
    rewrittenLink: true,
  },
  intentionallyNotExported: [
    'AlgorithmBinding',
    'BucketTake',
    'BucketsContext',
    'CallRule',
    'CalendarPeriods',
    'DriverFailure',
    'EvictedSummary',
    'KeyHasher',
    'MaybePromise',
    'MemoryLeaseBuckets',
    'MemoryBucket',
    'Pipeline',
    'PostgresLeaseBuckets',
    'RedisLeaseBuckets',
    'RuleStatements',
    'ScriptDecision',
    'StateShape',
    'WindowBucketTake',
    'WindowRuleTake',
  ],
};
