#!/usr/bin/env node
// The `sluice` command (package.json "bin"). In a clone of the repository it runs the TypeScript
// sources through tsx, a development dependency, so that `npx sluice` works right after `npm ci`
// and always runs the code as it is now, never a stale build. Installed from the registry or a
// packed tarball there are no sources: it runs the build, dist/sluice.js.
import { existsSync } from 'node:fs';

const source = new URL('../src/server/bin.ts', import.meta.url);
if (existsSync(source)) {
  const { register } = await import('tsx/esm/api');
  register();
  await import(source.href);
} else {
  await import(new URL('../dist/sluice.js', import.meta.url).href);
}
