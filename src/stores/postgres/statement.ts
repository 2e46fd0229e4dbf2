import { createHash } from 'node:crypto';

/** One statement: its text and the name it is prepared under. */
export interface Statement {
  readonly text: string;
  readonly name: string;
}

/** A statement of `text`, prepared under a name derived from it. */
export function statement(text: string): Statement {
  return { text, name: `sluice_${createHash('sha256').update(text).digest('base64url').slice(0, 20)}` };
}
