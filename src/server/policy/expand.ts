import { isScalar, visit, type Document, type Scalar } from 'yaml';

/** What an expanded scalar was before: for errors ("the value of ${NAME}") and for printing. */
export interface Expansion {
  /** The text as written, `${NAME}` and `$${` included. */
  readonly written: string;
  /** The variables it reads, in order. */
  readonly names: readonly string[];
}

/** A variable that is not set, or a `${` that is not a variable, in the scalar `node`. */
export interface ExpansionProblem {
  readonly node: Scalar;
  readonly message: string;
}

const reference = /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$\{/g;

/**
 * `${NAME}` is written unquoted in flow mappings (`{ token: ${TOKEN}, scopes: [decide] }`), where
 * YAML reads its braces as a mapping and refuses the line. Before parsing, each `${NAME}` is
 * written `$<open>NAME<close>` with two private-use characters of the same length, which YAML
 * reads as plain text anywhere; every scalar gets its `${NAME}` back right after parsing, before
 * anything reads it. Only a text that holds neither character is shielded, so every one of them
 * in the parsed document is one put there here; columns stay where they were written.
 */
const open = '\uE000';
const close = '\uE001';
const shieldable = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;
const shielded = /\$\uE000([A-Za-z_][A-Za-z0-9_]*)\uE001/g;

/** The text to parse: `${NAME}` shielded from YAML's flow syntax (see above). */
export function shieldReferences(text: string): string {
  if (text.includes(open) || text.includes(close) || !text.includes('${')) return text;
  return text.replace(shieldable, `$${open}$1${close}`);
}

/** Gives every scalar of `doc`, keys included, the `${NAME}` that {@link shieldReferences} hid. */
function unshield(doc: Document): void {
  visit(doc, {
    Scalar(_key, node) {
      if (typeof node.value === 'string' && node.value.includes(open))
        node.value = node.value.replace(shielded, '$${$1}');
    },
  });
}

/**
 * Replaces `${NAME}` in every string value of `doc` (never in keys) by the environment variable
 * NAME, and `$${` by a literal `${`, before validation, so that secrets and URLs stay out of
 * the file. The result is not read as YAML again: a variable's value is one string, whatever it
 * holds. Returns the scalars that changed and the problems found (an unset variable, a `${`
 * that names no variable); no message carries a value.
 */
export function expandEnvironment(
  doc: Document,
  env: Readonly<Record<string, string | undefined>>,
): { expanded: Map<Scalar, Expansion>; problems: ExpansionProblem[] } {
  const expanded = new Map<Scalar, Expansion>();
  const problems: ExpansionProblem[] = [];
  unshield(doc);
  visit(doc, {
    Scalar(key, node) {
      if (key === 'key' || typeof node.value !== 'string' || !node.value.includes('${')) return;
      const written = node.value;
      const names: string[] = [];
      let failed = false;
      const value = written.replace(reference, (match: string, name: string | undefined) => {
        if (match === '$${') return '${';
        if (name === undefined) {
          failed = true;
          problems.push({
            node,
            message:
              'a "${" that names no variable: write ${NAME} (letters, digits, _) or $${ for a literal "${"',
          });
          return match;
        }
        names.push(name);
        const found = env[name];
        if (found === undefined) {
          failed = true;
          problems.push({ node, message: `the environment variable ${name} is not set` });
          return match;
        }
        return found;
      });
      if (!failed) node.value = value;
      expanded.set(node, { written, names });
    },
  });
  return { expanded, problems };
}

/** The expansion of the value at `node`, if it is an expanded scalar. */
export function expansionOf(expanded: Map<Scalar, Expansion>, node: unknown): Expansion | undefined {
  return isScalar(node) ? expanded.get(node as Scalar) : undefined;
}
