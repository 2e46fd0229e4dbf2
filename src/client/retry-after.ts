/**
 * Reads a Retry-After field value (RFC 9110 §10.2.3) into the wait it asks for, in ms from `now`.
 *
 * What a bad value becomes (never an exception, never a negative or NaN wait):
 * - delta-seconds `"2"` → 2000; leading zeros are fine;
 * - a fractional `"1.5"` (not valid HTTP) → rounded **up** to whole seconds (2000), so the
 *   client never retries sooner than the server may have meant;
 * - an HTTP date (IMF-fixdate, RFC 850 or asctime, all three of which RFC 9110 makes recipients
 *   accept) → the time from `now` to it; a date not in the future → 0, i.e. no lower bound;
 * - a huge value → kept as is, up to `Number.MAX_SAFE_INTEGER` ms, never shortened: the caller
 *   compares it with its cap and gives up rather than retrying too early or overflowing a timer;
 * - negative, empty, garbage, a list (`"2, 3"`), an impossible date (`31 Feb`) → `undefined`,
 *   i.e. ignored: the caller falls back to its backoff.
 *
 * @param value the header value, or null when absent (or not exposed by CORS, see docs/client.md)
 * @param now the client's clock in ms since the Unix epoch; an HTTP date is only as good as it
 * @returns ms to wait (>= 0), or undefined when there is no usable value
 * @example parseRetryAfter('120', Date.now()) // 120000
 */
export function parseRetryAfter(value: string | null | undefined, now: number): number | undefined {
  if (value === null || value === undefined) return undefined;
  const text = value.trim();
  const seconds = secondsPattern.exec(text);
  if (seconds !== null) {
    const ms = Math.ceil(Number(text)) * 1000;
    return Math.min(ms, Number.MAX_SAFE_INTEGER);
  }
  const date = parseHttpDate(text, now);
  if (date === undefined) return undefined;
  return Math.min(Math.max(0, date - now), Number.MAX_SAFE_INTEGER);
}

// Digits, optionally with a fraction; no sign, so "-1" and "+1" are garbage.
const secondsPattern = /^\d+(?:\.\d+)?$/;

const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const month = `(${months.join('|')})`;
const time = '(\\d{2}):(\\d{2}):(\\d{2})';
// Sun, 06 Nov 1994 08:49:37 GMT
const imfFixdate = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\\d{2}) ${month} (\\d{4}) ${time} GMT$`);
// Sunday, 06-Nov-94 08:49:37 GMT
const rfc850 = new RegExp(
  `^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\\d{2})-${month}-(\\d{2}) ${time} GMT$`,
);
// Sun Nov  6 08:49:37 1994
const asctime = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ${month} ([ \\d]\\d) ${time} (\\d{4})$`);

/**
 * Parses the three HTTP date formats by hand: `Date.parse` accepts different strings in
 * different browsers, and a client library must read a header the same way everywhere.
 * The weekday is not checked against the date (RFC 9110 leaves that to the recipient).
 *
 * @param now the clock that places a two-digit RFC 850 year in a century. @default Date.now()
 * @returns ms since the Unix epoch, or undefined when the text is not a valid HTTP date
 * @example parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT') // 784111777000
 */
export function parseHttpDate(text: string, now: number = Date.now()): number | undefined {
  let m = imfFixdate.exec(text);
  if (m !== null) return utc(m[3], m[2], m[1], m[4], m[5], m[6]);
  m = rfc850.exec(text);
  if (m !== null) return utc(fullYear(Number(m[3]), now), m[2], m[1], m[4], m[5], m[6]);
  m = asctime.exec(text);
  if (m !== null) return utc(m[6], m[1], m[2], m[3], m[4], m[5]);
  return undefined;
}

// RFC 9110: a two-digit year more than 50 years in the future is the most recent past year
// with those digits.
function fullYear(twoDigits: number, now: number): number {
  const thisYear = new Date(now).getUTCFullYear();
  let year = Math.floor(thisYear / 100) * 100 + twoDigits;
  if (year > thisYear + 50) year -= 100;
  return year;
}

function utc(
  year: string | number | undefined,
  monthName: string | undefined,
  day: string | undefined,
  hour: string | undefined,
  minute: string | undefined,
  second: string | undefined,
): number | undefined {
  const [y, d, h, min, s] = [year, day, hour, minute, second].map(Number) as [
    number,
    number,
    number,
    number,
    number,
  ];
  const mon = months.indexOf(monthName ?? '');
  // Date.UTC rolls 31 Feb over into March; a date that does not exist is garbage, not a wait.
  if (d < 1 || h > 23 || min > 59 || s > 60) return undefined;
  const ms = Date.UTC(y, mon, d, h, min, Math.min(s, 59));
  if (new Date(ms).getUTCDate() !== d) return undefined;
  return ms + (s === 60 ? 1000 : 0);
}
