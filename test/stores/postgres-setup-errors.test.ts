/**
 * A PostgreSQL store set up wrongly says what is wrong in words: a database that does not exist,
 * nothing listening at the address, refused credentials; never the URL, its password or the
 * database's name.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { isSluiceError } from '../../src/index.js';
import { PostgresStore } from '../../src/stores/postgres/index.js';
import { storeError } from '../../src/stores/postgres/errors.js';
import { closedPort, postgresUrl, runId, skipUnlessReachable } from '../support/services.js';

const skip = await skipUnlessReachable('PostgreSQL', postgresUrl);
const missing = `sluice_missing_${runId}`;
const pools: pg.Pool[] = [];
after(() => Promise.all(pools.map((pool) => pool.end())));

/** The error `migrate()` rejects with on a pool to `url`. */
async function migrateError(url: string): Promise<unknown> {
  const pool = new pg.Pool({ connectionString: url, connectionTimeoutMillis: 5000 });
  pool.on('error', () => {});
  pools.push(pool);
  return new PostgresStore({ client: pool }).migrate().then(
    () => assert.fail('migrate() resolved'),
    (error: unknown) => error,
  );
}

describe('PostgreSQL store: set-up failures in words', () => {
  it('a database that does not exist', { skip }, async () => {
    const url = new URL(postgresUrl);
    url.password = 'never-said-0123';
    url.pathname = `/${missing}`;
    const error = await migrateError(url.href);
    assert.ok(isSluiceError(error, 'SLUICE_STORE_UNAVAILABLE'), String(error));
    assert.equal(
      error.message,
      'PostgreSQL store unavailable: the database does not exist (SQLSTATE 3D000): create it, or correct the database name of the connection settings',
    );
    assert.ok(!error.message.includes(missing) && !error.message.includes('never-said'));
  });

  it('nothing listening at the address', { skip }, async () => {
    const url = new URL(postgresUrl);
    url.port = String(await closedPort());
    const error = await migrateError(url.href);
    assert.ok(isSluiceError(error, 'SLUICE_STORE_UNAVAILABLE'), String(error));
    assert.match(
      error.message,
      /^PostgreSQL store unavailable: connection refused \(SQLSTATE ECONNREFUSED\): nothing listens/,
    );
  });

  it('refused credentials and a missing privilege', () => {
    const said = (code: string) => storeError(Object.assign(new Error('quoted text'), { code })).message;
    assert.match(said('28P01'), /unavailable: password authentication failed \(SQLSTATE 28P01\)/);
    assert.match(said('28000'), /unavailable: the server refused this user/);
    assert.match(said('42501'), /unavailable: permission denied \(SQLSTATE 42501\)/);
    // Any other code still says only the code.
    assert.equal(said('57P01'), 'PostgreSQL store unavailable (SQLSTATE 57P01)');
  });
});
