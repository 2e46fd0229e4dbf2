/**
 * One type check under `strict` over every snippet module (one TypeScript program, so the
 * library's sources and types are read once), each error reported at the document line it
 * comes from.
 */
import ts from 'typescript';
import { relative, resolve } from 'node:path';
import { docLocation, repoRoot, type SnippetModule } from './doc-snippets.js';

/**
 * The settings of a user's strict NodeNext project. Unlike the repository's own tsconfig it adds
 * no extra checks (`noUncheckedIndexedAccess`): a snippet must compile where users compile it.
 */
const compilerOptions: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  lib: ['lib.es2023.d.ts', 'lib.dom.d.ts'],
  types: ['node'],
  strict: true,
  esModuleInterop: true,
  // NestJS's decorators are TypeScript's older kind, which a NestJS project turns on.
  experimentalDecorators: true,
  skipLibCheck: true,
  noEmit: true,
};

/**
 * The compiler's errors, those in snippets as `docs/x.md:LINE: error TSnnnn: …`. Syntactic and
 * semantic errors are asked for separately: `tsc` itself stops at syntax errors, and one broken
 * snippet would hide the type errors of all the others.
 */
export function typeCheck(modules: readonly SnippetModule[]): string[] {
  const program = ts.createProgram(
    modules.map((m) => m.path),
    compilerOptions,
  );
  const byPath = new Map(modules.map((m) => [resolve(m.path), m]));
  const diagnostics = [
    ...program.getOptionsDiagnostics(),
    ...program.getGlobalDiagnostics(),
    ...program.getSyntacticDiagnostics(),
    ...program.getSemanticDiagnostics(),
  ];
  const errors = diagnostics.map((diagnostic) => {
    const message = `error TS${diagnostic.code}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ')}`;
    const file = diagnostic.file;
    if (file === undefined || diagnostic.start === undefined) return message;
    const line = file.getLineAndCharacterOfPosition(diagnostic.start).line + 1;
    const snippet = byPath.get(resolve(file.fileName));
    return snippet
      ? `${docLocation(snippet, line)}: ${message}`
      : `${relative(repoRoot, file.fileName)}:${line}: ${message}`;
  });
  // In document order, line 9 before line 16 (the compiler lists them by kind of error).
  return errors.sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
}
