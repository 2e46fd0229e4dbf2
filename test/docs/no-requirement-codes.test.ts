/**
 * No requirement codes or design-record numbers anywhere in the repository's code, tests, docs,
 * examples, benchmarks and scripts: each says the behaviour it pins in words, and a design taken
 * from an example service points at that example's README. A failure names file:line.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { repoRoot } from './doc-snippets.js';
import { findCodes, findCodesInTree } from './requirement-codes.js';

const SCANNED = ['README.md', 'src', 'docs', 'test', 'examples', 'bench', 'scripts'];

it('the repository names no requirement code and no design record', () => {
  const hits = findCodesInTree(repoRoot, SCANNED).map((hit) => `${hit.file}:${hit.line}: ${hit.match}`);
  assert.deepEqual(hits, [], `say these in words:\n${hits.join('\n')}`);
});

describe('what counts as a requirement code', () => {
  // Built from parts, so that this file holds no code for the scan above to find.
  const code = (letter: string, digits: number) => `${letter}${digits}`;
  const record = `${'A'}DR`;
  const matches = (text: string) => findCodes('sample', text).map((hit) => hit.match);

  it('finds labels, parenthesized codes and design records, and names file and line', () => {
    assert.deepEqual(findCodes('a.ts', `x\nit('${code('B', 1)}: when current reaches N keys')`), [
      { file: 'a.ts', line: 2, match: `${code('B', 1)}:` },
    ]);
    assert.deepEqual(matches(`describe('failures (${code('D', 2)})')`), [`(${code('D', 2)})`]);
    assert.deepEqual(matches(`it('${code('A', 4)}/${code('E', 3)}: exact')`), [
      `${code('A', 4)}/${code('E', 3)}:`,
    ]);
    assert.deepEqual(matches(`it('${code('E', 2)} + ${code('A', 4)}: exact')`), [
      `${code('E', 2)} + ${code('A', 4)}:`,
    ]);
    assert.deepEqual(matches(`// the quota (${code('C', 7)}, ${code('E', 3)})`), [
      `(${code('C', 7)}, ${code('E', 3)})`,
    ]);
    assert.deepEqual(matches(`as ${record}-0057 says; see ${record} 21 and the ${record}s`), [
      `${record}-0057`,
      `${record} 21`,
      `${record}s`,
    ]);
    assert.deepEqual(matches(`(see ${code('A', 12)})`), [`${code('A', 12)})`]);
  });

  it('leaves hex, addresses, status lines, code points and the V8 engine alone', () => {
    const legitimate = [
      'HTTP/1.1 429 Too Many Requests',
      "ipKey('fe80::A1:0:0:1') and '2001:DB8:1:2::3'",
      'const mask = 0x1F; color: #E0); U+00A0)',
      'outside the V8 heap (V8)',
      "'x'.repeat(B12a) and MAX_COUNT (10^12)",
      'sha512-MK2UZ454hAG+OAW+HQPZ6n++TNDUX+L0+uUlLywnox',
      'RFC 9457 and draft-ietf-httpapi-ratelimit-headers-10',
    ];
    for (const text of legitimate) assert.deepEqual(matches(text), [], text);
  });
});
