/** Builds an entry of the sources with tsup into a folder of a test's own (no types, no maps, quiet). */
import { build } from 'tsup';

export async function bundle(
  entry: Record<string, string>,
  outDir: string,
  options: { format: ('esm' | 'cjs')[]; splitting?: boolean; shims?: boolean; external?: string[] },
): Promise<void> {
  await build({
    entry,
    outDir,
    target: 'node20',
    dts: false,
    sourcemap: false,
    silent: true,
    config: false,
    removeNodeProtocol: false,
    ...options,
  });
}
