import { isMap, isPair, isScalar, isSeq, type Document, type LineCounter, type Node } from 'yaml';

/** A place in the file: line and column from 1. */
export interface Place {
  readonly line: number;
  readonly column: number;
}

/**
 * Where `path` was written: the deepest node of the path that exists (a missing key points at
 * the map it is missing from). With `atKey`, the last segment's key instead of its value (an
 * unknown key is reported where the key is written).
 */
export function locate(
  doc: Document,
  lines: LineCounter,
  path: readonly (string | number)[],
  atKey = false,
): Place {
  let node: unknown = doc.contents;
  let found: Node | undefined = isNode(node) ? node : undefined;
  for (let i = 0; i < path.length; i++) {
    const segment = path[i];
    let next: unknown;
    let keyNode: unknown;
    if (isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && keyText(p.key) === String(segment));
      next = pair?.value;
      keyNode = pair?.key;
    } else if (isSeq(node) && typeof segment === 'number') {
      next = node.items[segment];
    }
    if (atKey && i === path.length - 1 && isNode(keyNode)) {
      found = keyNode;
      break;
    }
    if (!isNode(next)) break;
    node = next;
    found = next;
  }
  const offset = found?.range?.[0] ?? 0;
  const { line, col } = lines.linePos(offset);
  return { line, column: col };
}

function keyText(key: unknown): string | undefined {
  if (isScalar(key)) return String(key.value);
  return typeof key === 'string' ? key : undefined;
}

function isNode(value: unknown): value is Node {
  return typeof value === 'object' && value !== null && 'range' in value;
}
