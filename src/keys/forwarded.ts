/**
 * Internal: reads an RFC 7239 `Forwarded` header one element at a time, from the right.
 *
 * Every proxy appends its element on the right; whatever the client sent arrives on the left.
 * So the header is never parsed as a whole: a syntax error the client wrote (an open quote, a
 * stray `;`) would otherwise make the whole header unusable and let the client choose to be
 * keyed as the proxy. The walk reads the rightmost element, decides, and moves left only past
 * trusted proxies; elements left of the decided one are never looked at.
 *
 * {@link previousElement} finds where an element starts by reading backwards to the comma before
 * it, skipping quoted strings (a quoted value may hold a comma). It then parses exactly that
 * element forwards, so an element is accepted only when it is valid read either way.
 */
export const forwardedElement = {
  /** Range of the element's `for=` value (quotes excluded), or -1 when it has none usable. */
  forStart: -1,
  forEnd: -1,
};

/** {@link previousElement}'s answer when the element cannot be read. */
export const UNREADABLE = -2;

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

function skipSpace(s: string, i: number, end: number): number {
  while (i < end && (s.charCodeAt(i) === 32 || s.charCodeAt(i) === 9)) i++;
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

/** True when the quote at `quote` is escaped: an odd run of backslashes stands before it. */
function isEscaped(s: string, quote: number): boolean {
  let k = quote - 1;
  while (k >= 0 && s.charCodeAt(k) === 92) k--;
  return (quote - 1 - k) % 2 === 1;
}

/**
 * The element of `value` that ends at `end` (the header's length, or the comma after the
 * element): returns the index of the comma before it (-1 when it is the first element), or
 * {@link UNREADABLE}; sets {@link forwardedElement}. An element without exactly one `for=`, or
 * whose `for=` value holds an escape (never part of an address), has no usable value (-1).
 */
export function previousElement(value: string, end: number): number {
  let comma = end - 1;
  for (; comma >= 0; comma--) {
    const c = value.charCodeAt(comma);
    if (c === 44) break;
    if (c !== 34) continue;
    // A closing quote: its quoted string may hold commas; find the opening quote.
    do comma--;
    while (comma >= 0 && (value.charCodeAt(comma) !== 34 || isEscaped(value, comma)));
    if (comma < 0) return UNREADABLE;
  }
  return parseElement(value, comma + 1, end) ? comma : UNREADABLE;
}

/** Parses the element `value[start, end)` forwards: `pair *( ";" pair )`, pair = name "=" value. */
function parseElement(value: string, start: number, end: number): boolean {
  let forStart = -1;
  let forEnd = -1;
  let fors = 0;
  let usable = true;
  let i = start;
  for (;;) {
    i = skipSpace(value, i, end);
    const nameStart = i;
    while (i < end && isTchar(value.charCodeAt(i))) i++;
    const nameEnd = i;
    if (nameEnd === nameStart || i === end || value.charCodeAt(i) !== 61) return false;
    i++;
    let valueStart = i;
    let valueEnd: number;
    let escaped = false;
    if (i < end && value.charCodeAt(i) === 34) {
      valueStart = ++i;
      while (i < end && value.charCodeAt(i) !== 34) {
        if (value.charCodeAt(i) === 92) {
          escaped = true;
          i++;
        }
        i++;
      }
      if (i >= end) return false;
      valueEnd = i++;
    } else {
      while (i < end && isTchar(value.charCodeAt(i))) i++;
      valueEnd = i;
      if (valueEnd === valueStart) return false;
    }
    if (isFor(value, nameStart, nameEnd)) {
      fors++;
      if (escaped) usable = false;
      forStart = valueStart;
      forEnd = valueEnd;
    }
    i = skipSpace(value, i, end);
    if (i === end) break;
    if (value.charCodeAt(i) !== 59) return false;
    i++;
  }
  usable = usable && fors === 1;
  forwardedElement.forStart = usable ? forStart : -1;
  forwardedElement.forEnd = usable ? forEnd : -1;
  return true;
}
