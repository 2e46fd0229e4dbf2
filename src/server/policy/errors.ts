import { SluiceError } from '../../core/errors.js';

/**
 * One problem found in a policy file, where it is: `line` and `column` count from 1, `path` is
 * where in the policy (`rules[2].period`, empty for the whole file). The message names the
 * place and what is expected, never a value read from the file or the environment (a value may
 * be a secret, and an expansion of `${NAME}` is named as "the value of ${NAME}").
 */
export interface PolicyIssue {
  readonly line: number;
  readonly column: number;
  readonly path: string;
  readonly message: string;
}

/**
 * A policy file that cannot be used, with every problem found in it: a `SLUICE_CONFIG`
 * `SluiceError` whose `issues` list each one with its line and column, in file order.
 *
 * @example
 * try { loadPolicyFile('sluice.yaml') }
 * catch (e) { if (e instanceof PolicyError) for (const i of e.issues) console.error(`${e.file}:${i.line}:${i.column}: ${i.message}`) }
 */
export class PolicyError extends SluiceError {
  /** The file's name as given, for `file:line:column` lines. */
  readonly file: string;
  readonly issues: readonly PolicyIssue[];

  constructor(file: string, issues: readonly PolicyIssue[]) {
    const sorted = [...issues].sort((a, b) => a.line - b.line || a.column - b.column);
    const first = sorted[0];
    super(
      'SLUICE_CONFIG',
      first === undefined
        ? `${file}: the policy cannot be used`
        : `${file}:${first.line}:${first.column}: ${first.message}` +
            (sorted.length > 1 ? ` (and ${sorted.length - 1} more)` : ''),
    );
    this.name = 'PolicyError';
    this.file = file;
    this.issues = sorted;
  }

  /** Every issue as `file:line:column: message`, one per line. */
  format(): string {
    return this.issues.map((i) => `${this.file}:${i.line}:${i.column}: ${i.message}`).join('\n');
  }
}

/** `rules[2].match.paths[0]` for the path segments ['rules', 2, 'match', 'paths', 0]. */
export function pathText(path: readonly (string | number)[]): string {
  let text = '';
  for (const segment of path) {
    if (typeof segment === 'number') text += `[${segment}]`;
    else text += text === '' ? segment : `.${segment}`;
  }
  return text;
}
