/**
 * Internal: finds the `for=` values of an RFC 7239 `Forwarded` header.
 *
 * The header is scanned once, left to right, because a quoted string may hold a comma; the value
 * ranges land in two reused arrays (no allocation once they have grown). An element with no
 * `for=`, two of them, or an escaped quoted value records the range (-1, -1): a position the walk
 * must treat as malformed. A syntax error anywhere makes the whole header malformed (false): a
 * header that cannot be read as a whole cannot be trusted in part.
 */
export const forwardedFor = { starts: [] as number[], ends: [] as number[] };

function isTchar(c: number): boolean {
  // RFC 9110 §5.6.2 tchar: ALPHA / DIGIT / "!#$%&'*+-.^_`|~"
  return (
    (c >= 97 && c <= 122) ||
    (c >= 65 && c <= 90) ||
    (c >= 48 && c <= 57) ||
    c === 33 ||
    (c >= 35 && c <= 39) ||
    c === 42 ||
    c === 43 ||
    c === 45 ||
    c === 46 ||
    c === 94 ||
    c === 95 ||
    c === 96 ||
    c === 124 ||
    c === 126
  );
}

function skipSpace(s: string, i: number): number {
  while (i < s.length && (s.charCodeAt(i) === 32 || s.charCodeAt(i) === 9)) i++;
  return i;
}

function isFor(s: string, start: number, end: number): boolean {
  return (
    end - start === 3 &&
    (s.charCodeAt(start) | 32) === 102 &&
    (s.charCodeAt(start + 1) | 32) === 111 &&
    (s.charCodeAt(start + 2) | 32) === 114
  );
}

/** Scans `value` into {@link forwardedFor}; false on a syntax error. */
export function scanForwarded(value: string): boolean {
  const { starts, ends } = forwardedFor;
  starts.length = 0;
  ends.length = 0;
  const n = value.length;
  let i = 0;
  for (;;) {
    let forStart = -1;
    let forEnd = -1;
    let fors = 0;
    let bad = false;
    for (;;) {
      i = skipSpace(value, i);
      const nameStart = i;
      while (i < n && isTchar(value.charCodeAt(i))) i++;
      const nameEnd = i;
      if (nameEnd === nameStart || value.charCodeAt(i) !== 61) return false;
      i++;
      let valueStart = i;
      let valueEnd: number;
      let escaped = false;
      if (value.charCodeAt(i) === 34) {
        valueStart = ++i;
        while (i < n && value.charCodeAt(i) !== 34) {
          // A backslash escape never belongs in an address: the value is unusable, not unreadable.
          if (value.charCodeAt(i) === 92) {
            escaped = true;
            i++;
          }
          i++;
        }
        if (i >= n) return false;
        valueEnd = i++;
      } else {
        while (i < n && isTchar(value.charCodeAt(i))) i++;
        valueEnd = i;
        if (valueEnd === valueStart) return false;
      }
      if (isFor(value, nameStart, nameEnd)) {
        fors++;
        if (escaped) bad = true;
        forStart = valueStart;
        forEnd = valueEnd;
      }
      i = skipSpace(value, i);
      if (i < n && value.charCodeAt(i) === 59) {
        i++;
        continue;
      }
      if (i === n || value.charCodeAt(i) === 44) break;
      return false;
    }
    const usable = fors === 1 && !bad;
    starts.push(usable ? forStart : -1);
    ends.push(usable ? forEnd : -1);
    if (i === n) return true;
    i++;
  }
}
