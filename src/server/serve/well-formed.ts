/**
 * Strings of a request body that are not well-formed UTF-16. The stores encode keys as UTF-8,
 * and the server's HMAC pseudonyms hash that encoding, where every lone surrogate becomes the
 * same replacement character: two keys that differ only there would share one bucket. The
 * library refuses such a key itself; the server refuses the whole batch before any rule reads
 * it, since a request's path or header may become a key only after it has been read.
 */

interface WellFormedCheck {
  isWellFormed(): boolean;
}

/** The JSON pointers of every string (object keys included) in `value` holding a lone surrogate. */
export function illFormedStrings(value: unknown, at = ''): string[] {
  // Every body is checked and almost none is ill-formed: a first pass builds no pointer text.
  if (wellFormed(value)) return [];
  const found: string[] = [];
  walk(value, at, found);
  return found;
}

/** True when every string and name in `value` is well-formed; allocates nothing. */
function wellFormed(value: unknown): boolean {
  if (typeof value === 'string') return (value as unknown as WellFormedCheck).isWellFormed();
  if (typeof value !== 'object' || value === null) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!wellFormed(value[i])) return false;
    return true;
  }
  for (const name in value) {
    if (!(name as unknown as WellFormedCheck).isWellFormed()) return false;
    if (!wellFormed((value as Record<string, unknown>)[name])) return false;
  }
  return true;
}

function walk(value: unknown, at: string, found: string[]): void {
  if (typeof value === 'string') {
    if (!(value as unknown as WellFormedCheck).isWellFormed()) found.push(at);
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) walk(value[i], `${at}/${i}`, found);
    return;
  }
  for (const name in value) {
    // A name is pointed at by its place only when it is itself the bad text (never repeated).
    const wellFormed = (name as unknown as WellFormedCheck).isWellFormed();
    const place = wellFormed ? `${at}/${pointerToken(name)}` : at;
    if (!wellFormed) found.push(place);
    else walk((value as Record<string, unknown>)[name], place, found);
  }
}

/** A name as a JSON pointer token (RFC 6901). */
function pointerToken(name: string): string {
  return name.replaceAll('~', '~0').replaceAll('/', '~1');
}
