/**
 * Request headers as sluice reads them: a Fetch `Headers` object, or a record with lower-case
 * names as Node's `IncomingMessage.headers` holds them (a repeated header may be an array).
 */
export type HeadersLike =
  { get(name: string): string | null } | Readonly<Record<string, string | readonly string[] | undefined>>;

/** Marks a header that was sent more than once where one value is expected. */
export const REPEATED = Symbol('repeated header');

/**
 * Internal: reads header `name` (lower case). Repeated values are joined with `", "` when `join`
 * is true (list headers such as X-Forwarded-For), and give {@link REPEATED} otherwise; anything
 * that is not a string gives undefined. Never throws on odd input.
 */
export function readHeader(
  headers: HeadersLike | undefined,
  name: string,
  join: boolean,
): string | undefined | typeof REPEATED {
  if (typeof headers !== 'object' || headers === null) return undefined;
  if (typeof headers.get === 'function') {
    // Fetch Headers joins repeated values with ", " itself; a list header stays a list.
    const value = (headers as { get(name: string): unknown }).get(name);
    if (typeof value !== 'string') return undefined;
    return !join && value.indexOf(',') >= 0 ? REPEATED : value;
  }
  const value: unknown = (headers as Record<string, unknown>)[name];
  if (typeof value === 'string') return value;
  if (!Array.isArray(value) || value.length === 0) return undefined;
  if (value.length === 1) return typeof value[0] === 'string' ? value[0] : undefined;
  if (!join) return REPEATED;
  for (const part of value) if (typeof part !== 'string') return undefined;
  return value.join(', ');
}
