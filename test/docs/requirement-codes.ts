/**
 * Finds requirement codes and document numbers in text: labels made of a capital letter and one
 * or two digits (several joined by `,`, `/`, `+` or `&`) before a colon, before a closing
 * parenthesis or inside parentheses, and design records named by number or by their
 * abbreviation. A reader of the repository has no copy of the documents they name, so code,
 * tests and docs say what behaviour they pin in words instead. (This file describes the codes
 * in words for the same reason: the scan reads it too. Its test builds its samples from parts.)
 *
 * What is not a code: hex and IPv6 groups (glued to a word character, `:`, `#` or `.`, or
 * followed by more of the address), code points such as `U+00A0`, HTTP status lines, and the
 * name of the V8 engine.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';

/** One code found: where, and the text that matched. */
export interface CodeHit {
  /** Relative to the root given to {@link findCodesInTree}, or the name given to {@link findCodes}. */
  readonly file: string;
  /** 1-based. */
  readonly line: number;
  readonly match: string;
}

const CODE = '[A-Z][0-9]{1,2}';
// A label before a colon and a space (or the line's end), or a code before a closing parenthesis.
const LABEL = new RegExp(`(?<![\\w:.#/+@-])${CODE}(?:\\s*[,/+&]\\s*${CODE})*(?::(?=\\s|$|['"\`])|\\))`, 'g');
// One or several codes alone inside parentheses.
const IN_PARENTHESES = new RegExp(`\\(\\s*${CODE}(?:\\s*[,/+&]\\s*${CODE})*\\s*\\)`, 'g');
// A design record by number, or by its name alone. Spelled so that this file does not match.
const RECORD = new RegExp(`\\b${'A'}DR(?:[- ]?[0-9]+|s?\\b)`, 'g');
/** Names that look like codes and are not. */
const NOT_CODES = new Set(['V8']);

/** The codes in one text, in order of lines; overlapping matches count once. */
export function findCodes(file: string, text: string): CodeHit[] {
  const hits: CodeHit[] = [];
  for (const [index, line] of text.split('\n').entries()) {
    const found: { start: number; end: number; match: string }[] = [];
    for (const pattern of [LABEL, IN_PARENTHESES, RECORD]) {
      for (const match of line.matchAll(pattern)) {
        const codes = match[0].match(new RegExp(CODE, 'g')) ?? [];
        if (pattern !== RECORD && codes.every((code) => NOT_CODES.has(code))) continue;
        found.push({ start: match.index, end: match.index + match[0].length, match: match[0] });
      }
    }
    found.sort((a, b) => a.start - b.start || b.end - a.end);
    let reached = -1;
    for (const { start, end, match } of found) {
      if (start < reached) continue; // inside a longer match already reported
      hits.push({ file, line: index + 1, match });
      reached = end;
    }
  }
  return hits;
}

/** Folders never scanned: dependencies, build output, scratch and benchmark results. */
const SKIPPED_FOLDERS = new Set(['node_modules', 'dist', 'results']);

/** Every text file under `path` (a file or folder), skipping dependencies and lockfiles. */
function filesUnder(path: string): string[] {
  let entries;
  try {
    entries = readdirSync(path, { withFileTypes: true });
  } catch {
    return [path];
  }
  const files: string[] = [];
  for (const entry of entries) {
    if (entry.name.startsWith('.') || SKIPPED_FOLDERS.has(entry.name)) continue;
    if (entry.name.endsWith('-lock.json')) continue;
    const child = join(path, entry.name);
    if (entry.isDirectory()) files.push(...filesUnder(child));
    else if (entry.isFile()) files.push(child);
  }
  return files;
}

/** The codes in every text file of `paths` (files or folders, relative to `root`). */
export function findCodesInTree(root: string, paths: readonly string[]): CodeHit[] {
  const hits: CodeHit[] = [];
  for (const path of paths) {
    for (const file of filesUnder(join(root, path)).sort()) {
      const text = readFileSync(file, 'utf8');
      if (text.includes('\0')) continue; // not text
      hits.push(...findCodes(relative(root, file).split('\\').join('/'), text));
    }
  }
  return hits;
}
