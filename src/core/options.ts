import { SluiceError, describeValue } from './errors.js';

/**
 * Checks that `options` is a plain object holding only `known` keys (ARCHITECTURE convention 3:
 * unknown keys are rejected, so a misspelt `burts: 10` is an error, not a silently default burst).
 */
export function checkOptionKeys(owner: string, options: unknown, known: readonly string[]): void {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new SluiceError(
      'SLUICE_CONFIG',
      `${owner} options must be an object; received ${describeValue(options)}`,
    );
  }
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) {
      throw new SluiceError(
        'SLUICE_CONFIG',
        `${owner} has no option ${JSON.stringify(key)}; known options: ${known.join(', ')}`,
      );
    }
  }
}
