/**
 * The server's JSON log must never carry a request value. Every server started by the tests
 * (serve-support) remembers the client addresses, header values and keys its requests used, and
 * when it stops its log lines are scanned for each of them.
 */

/** Values shorter than this would match inside ordinary words; no test uses one as an identity. */
const SHORTEST = 3;
/** Longer values are bodies made to be refused (too large), not identities. */
const LONGEST = 1000;
/** What continues a token: a value found inside a longer word, number or address is not that value. */
const TOKEN = /[\w.]/;

/** The request values of a decision API body: addresses, header values (each list member), keys. */
export function requestValues(body: unknown): string[] {
  const found: string[] = [];
  const items = (body as { items?: unknown })?.items;
  if (!Array.isArray(items)) return found;
  for (const item of items as Record<string, unknown>[]) {
    if (typeof item?.key === 'string') found.push(item.key);
    const request = item?.request as { address?: unknown; headers?: Record<string, unknown> } | undefined;
    if (typeof request?.address === 'string') found.push(request.address);
    for (const value of Object.values(request?.headers ?? {}))
      if (typeof value === 'string') found.push(value, ...value.split(',').map((v) => v.trim()));
  }
  return found;
}

/** The JSON lines of a server's output (its log); the human start-up lines are left out. */
export function logLines(output: string): string[] {
  return output.split('\n').filter((line) => line.startsWith('{'));
}

/**
 * The log lines that carry one of `values`, as a whole token (not inside a longer word, number
 * or address); `except` are values the server may log as its own (its listening address).
 */
export function leaks(output: string, values: Iterable<string>, except: readonly string[] = []): string[] {
  const sought = [...new Set(values)].filter(
    (v) => v.length >= SHORTEST && v.length <= LONGEST && !except.includes(v),
  );
  const found: string[] = [];
  for (const line of logLines(output))
    for (const value of sought) if (holdsToken(line, value)) found.push(`${value} in ${line}`);
  return found;
}

/** True when `value` stands in `line` with no word, number or address character right around it. */
function holdsToken(line: string, value: string): boolean {
  for (let at = line.indexOf(value); at !== -1; at = line.indexOf(value, at + 1)) {
    const before = line[at - 1] ?? ' ';
    const after = line[at + value.length] ?? ' ';
    if (!TOKEN.test(before) && !TOKEN.test(after)) return true;
  }
  return false;
}
