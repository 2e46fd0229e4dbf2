/**
 * The one response header a rate limit adds to rather than replaces. CORS layers set
 * `Access-Control-Expose-Headers` too; writing ours over theirs would hide their headers from
 * other origins, and theirs over ours would hide `Retry-After`.
 */

/**
 * The name of the header whose value adapters merge with {@link mergeExposed} instead of
 * setting it.
 *
 * @example
 * response.setHeader(name, name === EXPOSE_HEADER ? mergeExposed(response.getHeader(name), value) : value);
 */
export const EXPOSE_HEADER = 'Access-Control-Expose-Headers';

/**
 * The `Access-Control-Expose-Headers` value after adding ours to what a CORS layer already
 * exposed, so that neither list is lost, and without repeating a name already listed (by the CORS
 * layer, or by this limit on an earlier pass). Every adapter merges this way, so that they answer
 * byte for byte alike.
 *
 * @default `ours` when nothing was exposed before
 * @example
 * mergeExposed('X-Request-Id', 'Retry-After') // 'X-Request-Id, Retry-After'
 */
export function mergeExposed(existing: unknown, ours: string): string {
  if (existing === undefined || existing === null || existing === '') return ours;
  const before = Array.isArray(existing) ? existing.join(', ') : String(existing);
  const listed = new Set(
    before
      .toLowerCase()
      .split(',')
      .map((name) => name.trim()),
  );
  let merged = before;
  for (const name of ours.split(', ')) if (!listed.has(name.toLowerCase())) merged += `, ${name}`;
  return merged;
}
