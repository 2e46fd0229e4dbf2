/**
 * No output of `sluice check` or `sluice serve` carries a store URL's password, whatever the
 * URL's shape: a password in the user part holding `/`, `:` or `@`, one given as `?password=`,
 * a port past 65535, a space, a missing `]`; written in the file or read from `${NAME}`. A
 * malformed URL is a policy error naming `store.url`, never the driver's exception (which
 * quotes the URL it was given).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { inspect } from 'node:util';
import fc from 'fast-check';
import { runCli, type CliIo } from '../../src/server/cli.js';
import { policyFile } from './cli-support.js';

/** Each part of a password starts with this: any part of it in an output is a leak. */
const MARK = 'Zq7X';

const password = fc
  .tuple(
    fc.array(fc.stringMatching(/^[A-Za-z0-9]{0,5}$/), { minLength: 1, maxLength: 4 }),
    fc.array(fc.constantFrom('/', ':', '@', '?', '%', ' ', '&', '=', '+', ';', '!', '[', ']', '~', ','), {
      minLength: 3,
      maxLength: 3,
    }),
  )
  .map(([words, separators]) => words.map((w, i) => `${i > 0 ? separators[i - 1] : ''}${MARK}${w}`).join(''));

const shapes = {
  userPassword: (p: string, s: string, port: string) => `${s}://:${p}@127.0.0.1${port}/0`,
  userAndPassword: (p: string, s: string, port: string) => `${s}://ann:${p}@127.0.0.1${port}/db`,
  queryPassword: (p: string, s: string, port: string) => `${s}://127.0.0.1${port}/db?password=${p}`,
  sslPassword: (p: string, s: string, port: string) =>
    `${s}://ann@127.0.0.1${port}/db?sslmode=require&sslpassword=${p}`,
  ipv6Unclosed: (p: string, s: string, port: string) => `${s}://:${p}@[::1${port}/0`,
};

/** Runs the CLI in this process; everything it wrote, and any error it threw as node prints it. */
async function cli(args: string[], env: Record<string, string>): Promise<{ code: number; output: string }> {
  let output = '';
  const io: CliIo = { out: (t) => (output += t), err: (t) => (output += t), env };
  try {
    return { code: await runCli(['node', 'sluice', ...args], io), output };
  } catch (error) {
    return { code: -1, output: output + inspect(error) };
  }
}

describe('store URLs with passwords', () => {
  it('no output of check or serve carries any part of the password (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        password,
        fc.constantFrom(...(Object.keys(shapes) as (keyof typeof shapes)[])),
        fc.constantFrom('redis', 'postgres'),
        fc.constantFrom(':6379', ':99999', ' :6379', '', ':5432 '),
        fc.boolean(),
        async (secret, shape, type, port, fromEnv) => {
          const url = shapes[shape](secret, type === 'redis' ? 'redis' : 'postgres', port);
          const written = fromEnv ? '${STORE_URL}' : url;
          const file = policyFile(
            `version: 1\nstore: { type: ${type}, url: ${JSON.stringify(written)} }\nrules:\n  - { name: api, algorithm: token-bucket, limit: 1, period: 1m }\n`,
          );
          const env: Record<string, string> = fromEnv ? { STORE_URL: url } : {};
          const outputs: string[] = [];
          for (const format of ['json', 'yaml'])
            outputs.push((await cli(['check', '--format', format, file], env)).output);
          const checked = await cli(['check', file], env);
          // A URL the policy refuses never reaches a driver: serve stops with the same error.
          if (checked.code !== 0) {
            const served = await cli(['serve', '--config', file, '--port', '0'], env);
            assert.equal(served.code, 1);
            assert.match(served.output, /store\.url/);
            outputs.push(served.output);
          }
          for (const output of outputs) assert.ok(!output.toLowerCase().includes(MARK.toLowerCase()), output);
        },
      ),
      { numRuns: 150 },
    );
  });

  it("a port past 65535 in ${REDIS_URL} is a policy error naming store.url, not the driver's exception", async () => {
    const file = policyFile(
      'version: 1\nstore: { type: redis, url: "${REDIS_URL}" }\nrules:\n  - { name: api, algorithm: token-bucket, limit: 1, period: 1m }\n',
    );
    const served = await cli(['serve', '--config', file, '--port', '0'], {
      REDIS_URL: 'redis://:hunter2hunter2@127.0.0.1:99999',
    });
    assert.equal(served.code, 1);
    assert.match(
      served.output,
      /store\.url \(the value of \$\{REDIS_URL\}\) must be a redis:\/\/ or rediss:\/\/ URL/,
    );
    assert.ok(!served.output.includes('hunter2'));
  });

  it('check shows a password written in the file as <hidden>, and the rest of the URL', async () => {
    const file = policyFile(
      'version: 1\nstore: { type: redis, url: "redis://ann:pa%2Fss@127.0.0.1:6379/0?db=2&password=x1y2z3&tls=1" }\nrules:\n  - { name: api, algorithm: token-bucket, limit: 1, period: 1m }\n',
    );
    const checked = await cli(['check', file], {});
    assert.equal(checked.code, 0, checked.output);
    assert.equal(
      JSON.parse(checked.output).store.url,
      'redis://ann:<hidden>@127.0.0.1:6379/0?db=2&password=<hidden>',
    );
  });
});
