// After tsup (npm run build): bundles the dashboard's page into dist/, where the built server reads it.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUILT_DIR } from '../src/server/dashboard/assets.js';
import { bundleDashboard } from '../src/server/dashboard/bundle.js';

const dir = join(fileURLToPath(new URL('../dist/', import.meta.url)), BUILT_DIR);
const assets = await bundleDashboard();
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, 'index.html'), assets.html);
writeFileSync(join(dir, 'app.js'), assets.js);
writeFileSync(join(dir, 'app.css'), assets.css);
console.log(`dashboard page: ${dir} (script ${(assets.js.length / 1024).toFixed(0)} KiB)`);
