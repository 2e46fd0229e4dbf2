/**
 * The built `sluice` finds the .proto files of Envoy's rate limit service beside its bundle, as
 * the package ships them (tsup.config.ts copies src/server/envoy/protos to dist/protos; the exports
 * check asserts they are there): the bundle, built into a folder of its own with the protos
 * copied the same way, starts with --grpc-port and answers health and ShouldRateLimit.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundle } from '../../support/bundle.js';
import { Client, credentials, Metadata } from '@grpc/grpc-js';
import { root } from '../cli-support.js';
import { runId } from '../../support/services.js';
import { decodeResponse, encodeRequest, Code } from './wire.js';

describe('the built sluice serves Envoy', () => {
  it('loads its protos from beside the bundle and answers ShouldRateLimit', async () => {
    assert.match(
      readFileSync(join(root, 'tsup.config.ts'), 'utf8'),
      /cpSync\('src\/server\/envoy\/protos', 'dist\/protos'/,
    );
    // Inside the repository, so that the bundle resolves its dependencies from node_modules.
    const outDir = join(root, '.tmp', `envoy-built-${runId}`);
    mkdirSync(outDir, { recursive: true });
    try {
      await bundle({ sluice: join(root, 'src/server/bin.ts') }, outDir, {
        format: ['esm'],
        splitting: true,
        shims: true,
        external: ['esbuild'],
      });
      cpSync(join(root, 'src/server/envoy/protos'), join(outDir, 'protos'), { recursive: true });
      writeFileSync(join(outDir, 'package.json'), '{"type":"module"}');
      const policy = join(outDir, 'sluice.yaml');
      writeFileSync(
        policy,
        'version: 1\nrules: []\nenvoy:\n  domains:\n    - domain: d\n      descriptors:\n        - key: k\n          rate_limit: { unit: minute, requests_per_unit: 1 }\n',
      );
      const child = spawn(
        process.execPath,
        [join(outDir, 'sluice.js'), 'serve', '--config', policy, '--port', '0', '--grpc-port', '0'],
        { cwd: outDir, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let output = '';
      child.stdout!.on('data', (c: Buffer) => (output += c));
      child.stderr!.on('data', (c: Buffer) => (output += c));
      try {
        const address = await new Promise<string>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`no gRPC address:\n${output}`)), 20_000);
          child.stdout!.on('data', () => {
            const found = /\(gRPC\) on (\S+)/.exec(output);
            if (found !== null) {
              clearTimeout(timer);
              resolve(found[1]!);
            }
          });
          child.once('exit', () => reject(new Error(`exited:\n${output}`)));
        });
        const client = new Client(address, credentials.createInsecure());
        const call = () =>
          new Promise<ReturnType<typeof decodeResponse>>((resolve, reject) =>
            client.makeUnaryRequest(
              '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit',
              (b: Buffer) => b,
              decodeResponse,
              encodeRequest({ domain: 'd', descriptors: [{ entries: [['k', 'built']] }] }),
              new Metadata(),
              { deadline: Date.now() + 10_000 },
              (error, value) => (error !== null ? reject(error) : resolve(value!)),
            ),
          );
        assert.equal((await call()).overallCode, Code.OK);
        assert.equal((await call()).overallCode, Code.OVER_LIMIT);
        client.close();
      } finally {
        child.kill('SIGTERM');
      }
    } finally {
      rmSync(outDir, { recursive: true, force: true });
    }
  });
});
