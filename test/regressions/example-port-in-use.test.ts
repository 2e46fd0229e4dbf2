/**
 * An example started on a port another process holds (`npm start` beside `npm run example:chat`)
 * says so in one line and exits 1, instead of printing an EADDRINUSE stack; and the examples'
 * default ports are not the server's (8411) nor its echo upstream's (8412).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('examples and the port in use', () => {
  it('no example listens by default where npm start does', () => {
    for (const name of ['chat', 'reports', 'catalog', 'policies']) {
      const main = readFileSync(join(root, 'examples', name, 'main.ts'), 'utf8');
      const port = /, (\d+)\);\s*$/.exec(main)?.[1];
      assert.ok(port !== undefined, name);
      assert.ok(!['8411', '8412'].includes(port), `${name} listens on ${port}`);
    }
  });

  it('the chat example on a port in use: one line, exit 1', async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const { port } = holder.address() as { port: number };
    try {
      const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = execFile(
          process.execPath,
          ['--import', 'tsx', join(root, 'examples/chat/main.ts')],
          { cwd: root, env: { PATH: process.env.PATH ?? '', PORT: String(port) }, timeout: 30_000 },
          (_error, stdout, stderr) => resolve({ code: child.exitCode, stdout, stderr }),
        );
      });
      assert.equal(result.code, 1);
      assert.equal(
        result.stderr,
        `chat: cannot listen on 127.0.0.1:${port} (EADDRINUSE): the port is in use by another process; stop it, or set PORT to another port\n`,
      );
    } finally {
      holder.close();
    }
  });
});
