import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The dashboard's page: its HTML, its one script (uPlot inside) and its one style sheet. */
export interface DashboardAssets {
  readonly html: string;
  readonly js: string;
  readonly css: string;
}

const page = (name: string) => fileURLToPath(new URL(`./page/${name}`, import.meta.url));

/**
 * Bundles the page's script and styles with esbuild (the build tool's own bundler, a development
 * dependency): run by `npm run build`, and by a server run from the sources on first use.
 */
export async function bundleDashboard(): Promise<DashboardAssets> {
  const esbuild = await import('esbuild');
  const result = await esbuild.build({
    entryPoints: { app: page('app.ts') },
    bundle: true,
    minify: true,
    write: false,
    outdir: 'out',
    format: 'iife',
    target: ['chrome110', 'firefox110', 'safari16'],
    legalComments: 'eof',
    logLevel: 'silent',
  });
  const text = (ext: string) => result.outputFiles.find((f) => f.path.endsWith(ext))?.text ?? '';
  return { html: readFileSync(page('index.html'), 'utf8'), js: text('.js'), css: text('.css') };
}
