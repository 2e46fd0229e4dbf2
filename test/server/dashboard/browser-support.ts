/**
 * Headless Chromium for the dashboard's browser tests: Debian's `chromium` package driven by
 * playwright-core (no browser download). Without it the tests are skipped with the reason, but
 * under CI=true (whose runner installs the package) a missing browser is a failure.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { root } from '../cli-support.js';
import { reportSkipped } from '../../support/services.js';

export const chromiumPath = process.env.SLUICE_CHROMIUM ?? '/usr/bin/chromium';

/** The skip reason when there is no browser (also reported as a skipped test); false when there is. */
export function skipUnlessChromium(): string | false {
  if (existsSync(chromiumPath)) return false;
  const reason = `no Chromium at ${chromiumPath} (apt-get install chromium, or set SLUICE_CHROMIUM)`;
  if (process.env.CI === 'true') throw new Error(`${reason}; under CI=true this is a failure, not a skip`);
  reportSkipped(reason);
  return reason;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath, headless: true, timeout: 30_000 });
}

/** Where the browser tests leave their screenshots (git-ignored; kept by CI as artifacts). */
export function artifactsDir(name: string): string {
  const dir = join(root, 'test-artifacts', name);
  mkdirSync(dir, { recursive: true });
  return dir;
}
