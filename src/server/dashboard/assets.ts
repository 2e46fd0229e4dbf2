import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DashboardAssets } from './bundle.js';

export type { DashboardAssets };

/** Where `npm run build` writes the page, beside the server's own built code. */
export const BUILT_DIR = 'dashboard-page';

let loading: Promise<DashboardAssets> | undefined;

/**
 * The page, its script and its style. A built server (the npm package, `node dist/sluice.js`)
 * reads the files `npm run build` bundled next to it; run from the sources (`npm start`, tests)
 * the page is bundled with esbuild on first use, so that no generated file is ever checked in
 * or stale. Either way every asset is served by the server itself: nothing comes from a CDN.
 */
export function dashboardAssets(): Promise<DashboardAssets> {
  loading ??= load();
  return loading;
}

async function load(): Promise<DashboardAssets> {
  const dir = builtDir();
  if (dir !== undefined && existsSync(join(dir, 'app.js'))) {
    const read = (name: string) => readFileSync(join(dir, name), 'utf8');
    return { html: read('index.html'), js: read('app.js'), css: read('app.css') };
  }
  const { bundleDashboard } = await import('./bundle.js');
  return bundleDashboard();
}

function builtDir(): string | undefined {
  // import.meta.url is the built chunk's (dist/) or, from the sources, this file's.
  const here = typeof import.meta.url === 'string' ? import.meta.url : undefined;
  return here === undefined ? undefined : fileURLToPath(new URL(`./${BUILT_DIR}/`, here));
}
