import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { LineCounter, isMap, parseDocument, type Document, type Node, type YAMLMap } from 'yaml';
import { PolicyError, type PolicyIssue } from '../policy/errors.js';
import type { EnvoyConfigProblem } from './config-check.js';
import { buildDomains, type EnvoyDomains } from './config.js';

/** Where the domains come from: the policy file's `envoy.domains`, and `--envoy-config`. */
export interface EnvoySources {
  /** The policy file's name, and the document and lines it was parsed into. */
  readonly file: string;
  readonly doc: Document;
  readonly lines: LineCounter;
  /** `envoy.domains` as written; undefined when the file has no `envoy`. */
  readonly domains: readonly unknown[] | undefined;
  /** A directory of envoyproxy/ratelimit files given on the command line. */
  readonly directory: string | undefined;
  /** An issue at a path of the policy file. */
  issue(path: readonly (string | number)[], what: string): PolicyIssue;
}

type Source = Parameters<typeof buildDomains>[0][number];

/**
 * Reads every domain: those written in the policy file, and the files it names (a directory
 * stands for its `.yaml` and `.yml` files, in name order) and those of `--envoy-config`. A
 * problem is a PolicyError at its line: in the policy file for a domain written there, in the
 * domain's own file otherwise, with envoyproxy/ratelimit's reason.
 */
export function loadEnvoyDomains(sources: EnvoySources): EnvoyDomains {
  const list: Source[] = [];
  const base = dirname(sources.file);
  (sources.domains ?? []).forEach((entry, i) => {
    const path = ['envoy', 'domains', i];
    if (typeof entry !== 'string') {
      const map = sources.doc.getIn(path, true) as YAMLMap;
      list.push({ map, at: inPolicy(sources, path) });
      return;
    }
    const fail = (): never => {
      throw new PolicyError(sources.file, [
        sources.issue(path, 'names no file or directory that can be read'),
      ]);
    };
    for (const name of filesOf(resolve(base, entry), fail)) list.push(readDomainFile(name));
  });
  if (sources.directory !== undefined) {
    const directory = sources.directory;
    const fail = (): never => {
      throw new PolicyError(directory, [
        { line: 1, column: 1, path: '', message: 'the directory of --envoy-config cannot be read' },
      ]);
    };
    for (const name of filesOf(resolve(directory), fail)) list.push(readDomainFile(name));
  }
  return buildDomains(list);
}

/** The files a name stands for: itself, or a directory's YAML files in name order. */
function filesOf(path: string, fail: () => never): string[] {
  try {
    if (!statSync(path).isDirectory()) return [path];
    return readdirSync(path)
      .filter((name) => /\.ya?ml$/.test(name) && !name.startsWith('.'))
      .sort()
      .map((name) => join(path, name))
      .filter((name) => statSync(name).isFile());
  } catch {
    return fail();
  }
}

/** One envoyproxy/ratelimit file, parsed as upstream's YAML 1.1 reader parses it. */
function readDomainFile(name: string): Source {
  let text: string;
  try {
    text = readFileSync(name, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new PolicyError(name, [{ line: 1, column: 1, path: '', message: `cannot be read (${code})` }]);
  }
  const lines = new LineCounter();
  const doc = parseDocument(text, {
    lineCounter: lines,
    version: '1.1',
    uniqueKeys: true,
    prettyErrors: false,
  });
  const error = doc.errors[0];
  if (error !== undefined) {
    const { line, col } = lines.linePos(error.pos[0]);
    const what = error.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
    throw new PolicyError(name, [
      { line, column: col, path: '', message: `error loading config file: yaml: ${what}` },
    ]);
  }
  const at = (problem: EnvoyConfigProblem): never => {
    const { line, col } = lines.linePos(problem.node?.range?.[0] ?? 0);
    throw new PolicyError(name, [{ line, column: col, path: '', message: problem.reason }]);
  };
  const contents = doc.contents as Node | null;
  if (contents !== null && !isMap(contents) && !isEmpty(contents))
    at({
      reason: 'error loading config file: yaml: unmarshal errors: the document is not a mapping',
      node: contents,
    } as EnvoyConfigProblem);
  return { map: isMap(contents) ? contents : (doc.createNode({}) as YAMLMap), at };
}

function isEmpty(node: Node): boolean {
  return 'value' in node && (node as { value: unknown }).value === null;
}

/** Problems of a domain written in the policy file, at their line there. */
function inPolicy(
  sources: EnvoySources,
  path: readonly (string | number)[],
): (problem: EnvoyConfigProblem) => never {
  return (problem) => {
    const { line, col } = sources.lines.linePos(problem.node?.range?.[0] ?? 0);
    throw new PolicyError(sources.file, [
      {
        line,
        column: col,
        path: `envoy.domains[${String(path[2])}]`,
        message: `envoy.domains[${String(path[2])}]: ${problem.reason}`,
      },
    ]);
  };
}
