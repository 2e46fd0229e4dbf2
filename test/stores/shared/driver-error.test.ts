/**
 * The one mapping of driver errors onto coded errors: codes kept, driver text dropped, input
 * errors never a store failure. Property-tested over arbitrary thrown values and messages.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { inspect } from 'node:util';
import fc from 'fast-check';
import { DriverError, driverError, type DriverErrorRules } from '../../../src/stores/shared/driver-error.js';
import { postgresErrors } from '../../../src/stores/postgres/errors.js';
import { SluiceError, isSluiceError } from '../../../src/index.js';

const rules: DriverErrorRules = {
  store: 'Test store',
  codeName: 'code',
  classify: (code) =>
    code === 'BADINPUT' ? { code: 'SLUICE_ARGUMENT', says: 'refused a value of this call' } : undefined,
};

describe('driverError', () => {
  it('passes a SluiceError through unchanged', () => {
    const error = new SluiceError('SLUICE_STORE_TIMEOUT', 'x');
    assert.equal(driverError(error, rules), error);
  });

  it('keeps the code, drops the text, and names the cause by class', () => {
    const raw = Object.assign(new TypeError('invalid input "ann@example.com"'), { code: 'BADINPUT' });
    const mapped = driverError(raw, rules);
    assert.ok(isSluiceError(mapped, 'SLUICE_ARGUMENT'));
    assert.equal(mapped.message, 'Test store refused a value of this call (code BADINPUT)');
    assert.equal(mapped.driverCode, 'BADINPUT');
    assert.ok(mapped.cause instanceof DriverError);
    assert.equal((mapped.cause as DriverError).code, 'BADINPUT');
    assert.match((mapped.cause as DriverError).message, /BADINPUT/);
  });

  it('an unknown code or no code at all is SLUICE_STORE_UNAVAILABLE', () => {
    const coded = driverError(Object.assign(new Error('down'), { code: 'ECONNREFUSED' }), rules);
    assert.ok(isSluiceError(coded, 'SLUICE_STORE_UNAVAILABLE'));
    assert.equal(coded.message, 'Test store unavailable (code ECONNREFUSED)');
    const bare = driverError('a thrown string', rules);
    assert.ok(isSluiceError(bare, 'SLUICE_STORE_UNAVAILABLE'));
    assert.equal(bare.message, 'Test store unavailable');
    assert.equal(bare.driverCode, undefined);
    assert.match((bare.cause as Error).message, /\(string\)/);
  });

  it('a store may read its code itself and carry it under its own property too', () => {
    const mapped = driverError(new Error('NOSCRIPT No matching script'), {
      ...rules,
      codeProperty: 'redisCode',
      codeOf: (e) => /^([A-Z]+) /.exec((e as Error).message)?.[1],
    });
    assert.equal(mapped.driverCode, 'NOSCRIPT');
    assert.equal((mapped as unknown as { redisCode: string }).redisCode, 'NOSCRIPT');
  });

  it('PostgreSQL: class 22 is SLUICE_ARGUMENT, a missing table SLUICE_STORE_SCHEMA, 57014 a timeout', () => {
    const of = (code: string) => driverError(Object.assign(new Error('m'), { code }), postgresErrors);
    assert.ok(isSluiceError(of('22003'), 'SLUICE_ARGUMENT'));
    assert.equal((of('22P02') as { sqlState?: string }).sqlState, '22P02');
    assert.ok(isSluiceError(of('42P01'), 'SLUICE_STORE_SCHEMA'));
    assert.match(of('42P01').message, /run store\.migrate\(\)/);
    assert.ok(isSluiceError(of('57014'), 'SLUICE_STORE_TIMEOUT'));
    assert.ok(isSluiceError(of('08006'), 'SLUICE_STORE_UNAVAILABLE'));
  });

  it('no message, inspection or JSON of the result repeats the driver text or a code-less value', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 6 }), fc.string({ minLength: 6 }), (text, code) => {
        fc.pre(!/^[A-Z0-9_]{1,40}$/.test(code));
        const marker = `<<${text}>>`;
        const mapped = driverError(
          Object.assign(new Error(marker), { code: `${marker}${code}` }),
          postgresErrors,
        );
        const seen = [mapped.message, inspect(mapped, { depth: 4 }), JSON.stringify(mapped) ?? ''].join('\n');
        return !seen.includes(marker) && isSluiceError(mapped, 'SLUICE_STORE_UNAVAILABLE');
      }),
    );
  });
});
