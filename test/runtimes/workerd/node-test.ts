/**
 * What the conformance suites use of `node:test`, for a Worker: workerd has no test runner, so
 * the bundle's `node:test` is this module. `describe` and `it` register tests in order; `run`
 * runs them one after the other and says which passed and which failed (with the error's
 * message). `t.mock.method` replaces a method for the test's duration.
 */
type Body = (t: TestContext) => unknown;
interface Options {
  skip?: string | boolean;
  concurrency?: number;
}
interface TestContext {
  mock: { method(object: object, name: string, implementation: (...args: unknown[]) => unknown): void };
}

const tests: { name: string; body: Body; skip: boolean }[] = [];
const leftOut = new Set<string>();

/** Tests named so (their own name, without the describe names) are reported skipped. */
export function leaveOut(name: string): void {
  leftOut.add(name);
}
const prefix: string[] = [];
let skipping = 0;

function split(options: Options | Body | undefined, body: Body | undefined): [Options, Body | undefined] {
  return typeof options === 'function' ? [{}, options] : [options ?? {}, body];
}

export function describe(name: string, options?: Options | Body, body?: Body): void {
  const [opts, fn] = split(options, body);
  const skip = opts.skip !== undefined && opts.skip !== false;
  prefix.push(name);
  if (skip) skipping++;
  try {
    (fn as (() => void) | undefined)?.();
  } finally {
    prefix.pop();
    if (skip) skipping--;
  }
}

export function it(name: string, options?: Options | Body, body?: Body): void {
  const [opts, fn] = split(options, body);
  const skip = skipping > 0 || (opts.skip !== undefined && opts.skip !== false) || leftOut.has(name);
  tests.push({ name: [...prefix, name].join(' > '), body: fn ?? (() => {}), skip });
}
export const test = it;
export function before(): void {
  throw new Error('before() is not supported by the Worker test shim');
}
export const after = before;

export interface RunReport {
  passed: string[];
  skipped: string[];
  failed: { name: string; error: string }[];
}

/** Runs every registered test in order. */
export async function run(): Promise<RunReport> {
  const report: RunReport = { passed: [], skipped: [], failed: [] };
  for (const { name, body, skip } of tests) {
    if (skip) {
      report.skipped.push(name);
      continue;
    }
    const restore: (() => void)[] = [];
    const context: TestContext = {
      mock: {
        method(object, method, implementation) {
          const target = object as Record<string, unknown>;
          const original = target[method];
          target[method] = implementation;
          restore.push(() => (target[method] = original));
        },
      },
    };
    try {
      await body(context);
      report.passed.push(name);
    } catch (error) {
      report.failed.push({
        name,
        error: error instanceof Error ? `${error.message}\n${error.stack}` : String(error),
      });
    } finally {
      for (const undo of restore.reverse()) undo();
    }
  }
  return report;
}

export default { describe, it, test, before, after };
