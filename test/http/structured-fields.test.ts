/**
 * The RFC 9651 serializer behind the IETF RateLimit fields. Exact outputs, the errors the RFC
 * requires, and a property: whatever the serializer writes, a parser written from the RFC (below,
 * the parts of §4.2 the RateLimit fields use) reads back as the same values.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  serializeBareItem,
  serializeList,
  type BareItem,
  type ListMember,
} from '../../src/http/structured-fields.js';

describe('structured-field bare items (RFC 9651 §4.1.3)', () => {
  it('integers: whole numbers of up to 15 digits, signed', () => {
    assert.equal(serializeBareItem(0), '0');
    assert.equal(serializeBareItem(-42), '-42');
    assert.equal(serializeBareItem(999_999_999_999_999), '999999999999999');
    assert.equal(serializeBareItem(-999_999_999_999_999), '-999999999999999');
    for (const bad of [1_000_000_000_000_000, -1_000_000_000_000_000, 1.5, Number.NaN, Infinity]) {
      assert.throws(() => serializeBareItem(bad), TypeError, String(bad));
    }
  });

  it('strings: quoted, with " and \\ escaped; control characters, DEL and non-ASCII rejected', () => {
    assert.equal(serializeBareItem('login'), '"login"');
    assert.equal(serializeBareItem(''), '""');
    assert.equal(serializeBareItem('say "hi" \\o/'), '"say \\"hi\\" \\\\o/"');
    for (const bad of ['é', 'naïve', '日本', 'tab\there', 'line\n', '\x7f', '\u0000']) {
      assert.throws(() => serializeBareItem(bad), /printable ASCII/, JSON.stringify(bad));
    }
  });

  it('booleans are ?1 and ?0', () => {
    assert.equal(serializeBareItem(true), '?1');
    assert.equal(serializeBareItem(false), '?0');
  });

  it('tokens start with a letter or * and hold tchar, ":" and "/"', () => {
    assert.equal(serializeBareItem({ token: 'text/plain' }), 'text/plain');
    assert.equal(serializeBareItem({ token: '*' }), '*');
    assert.equal(serializeBareItem({ token: "a!#$%&'*+-.^_`|~:/9" }), "a!#$%&'*+-.^_`|~:/9");
    for (const bad of ['', '1abc', 'has space', 'quo"te', 'é']) {
      assert.throws(() => serializeBareItem({ token: bad }), /invalid structured-field token/, bad);
    }
  });
});

describe('structured-field lists (RFC 9651 §4.1.1)', () => {
  it('members are joined by ", " and parameters follow as ;key=value', () => {
    const members: ListMember[] = [
      {
        value: 'burst',
        params: [
          ['q', 100],
          ['w', 60],
        ],
      },
      {
        value: 'daily',
        params: [
          ['q', 1000],
          ['w', 86_400],
        ],
      },
    ];
    assert.equal(serializeList(members), '"burst";q=100;w=60, "daily";q=1000;w=86400');
    assert.equal(serializeList([]), '');
    assert.equal(serializeList([{ value: 1 }]), '1');
  });

  it('a true boolean parameter is written as the bare key, false as ?0', () => {
    assert.equal(
      serializeList([
        {
          value: { token: 'x' },
          params: [
            ['a', true],
            ['b', false],
          ],
        },
      ]),
      'x;a;b=?0',
    );
  });

  it('parameter keys are lower case, start with a letter or *, and hold a-z 0-9 _ - . *', () => {
    assert.equal(serializeList([{ value: 1, params: [['*k_-.9', 2]] }]), '1;*k_-.9=2');
    for (const bad of ['Q', '1q', '', 'q w', 'é', '_q']) {
      assert.throws(
        () => serializeList([{ value: 1, params: [[bad, 1]] }]),
        /invalid structured-field key/,
        bad,
      );
    }
  });
});

// ---- A parser from RFC 9651 §4.2, for the types above only. ----

interface Parsed {
  value: BareItem;
  params: [string, BareItem][];
}

function parseList(input: string): Parsed[] {
  const s = { input, pos: 0 };
  const members: Parsed[] = [];
  if (input.length === 0) return members;
  for (;;) {
    const value = parseBareItem(s);
    const params: [string, BareItem][] = [];
    while (s.input[s.pos] === ';') {
      s.pos++;
      const key = /^[a-z*][a-z0-9_\-.*]*/.exec(s.input.slice(s.pos))?.[0];
      if (key === undefined) throw new SyntaxError(`key expected at ${s.pos}`);
      s.pos += key.length;
      if (s.input[s.pos] === '=') {
        s.pos++;
        params.push([key, parseBareItem(s)]);
      } else params.push([key, true]);
    }
    members.push({ value, params });
    if (s.pos === s.input.length) return members;
    if (s.input.slice(s.pos, s.pos + 2) !== ', ') throw new SyntaxError(`", " expected at ${s.pos}`);
    s.pos += 2;
  }
}

function parseBareItem(s: { input: string; pos: number }): BareItem {
  const c = s.input[s.pos];
  if (c === '"') {
    let out = '';
    for (s.pos++; s.pos < s.input.length; s.pos++) {
      const ch = s.input[s.pos]!;
      if (ch === '\\') {
        const next = s.input[++s.pos];
        if (next !== '"' && next !== '\\') throw new SyntaxError('bad escape');
        out += next;
      } else if (ch === '"') {
        s.pos++;
        return out;
      } else if (ch < ' ' || ch > '~') throw new SyntaxError('not printable ASCII');
      else out += ch;
    }
    throw new SyntaxError('unterminated string');
  }
  if (c === '?') {
    const b = s.input[s.pos + 1];
    s.pos += 2;
    if (b === '1') return true;
    if (b === '0') return false;
    throw new SyntaxError('bad boolean');
  }
  const integer = /^-?[0-9]{1,15}/.exec(s.input.slice(s.pos))?.[0];
  if (integer !== undefined) {
    s.pos += integer.length;
    return Number(integer);
  }
  const token = /^[A-Za-z*][!#$%&'*+\-.^_`|~0-9A-Za-z:/]*/.exec(s.input.slice(s.pos))?.[0];
  if (token === undefined) throw new SyntaxError(`item expected at ${s.pos}`);
  s.pos += token.length;
  return { token };
}

describe('what the serializer writes, an RFC 9651 parser reads back', () => {
  const printable = fc.string({
    unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
    maxLength: 40,
  });
  const integer = fc.integer({ min: -999_999_999_999_999, max: 999_999_999_999_999 });
  const token = fc
    .stringMatching(/^[A-Za-z*][!#$%&'*+\-.^_`|~0-9A-Za-z:/]{0,12}$/)
    .map((t) => ({ token: t }));
  const item: fc.Arbitrary<BareItem> = fc.oneof(printable, integer, fc.boolean(), token);
  const key = fc.stringMatching(/^[a-z*][a-z0-9_\-.*]{0,6}$/);
  const member = fc
    .tuple(item, fc.array(fc.tuple(key, item), { maxLength: 3 }))
    .map(([value, params]) => ({ value, params }));

  it('any printable-ASCII string round-trips, quotes and backslashes included', () => {
    fc.assert(
      fc.property(printable, (value) => {
        assert.deepEqual(parseList(serializeBareItem(value)), [{ value, params: [] }]);
      }),
      { numRuns: 500 },
    );
  });

  it('any list of items with parameters round-trips', () => {
    fc.assert(
      fc.property(fc.array(member, { maxLength: 4 }), (members) => {
        assert.deepEqual(parseList(serializeList(members)), members);
      }),
      { numRuns: 300 },
    );
  });
});
