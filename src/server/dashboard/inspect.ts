import { normalizePath, pathOf } from '../../http/path.js';
import type { CompiledPolicy } from '../policy/compile.js';
import type { DecisionRequest } from '../policy/request.js';
import { peek } from '../serve/decide.js';

/** What the inspector's form sends: a rule, and a value for each of its key's parts. */
export interface InspectBody {
  rule: string;
  /** By part as the rule writes it (`address`, `header:x-nick`, `host`, `method`, `path`). */
  parts: Record<string, string>;
}

/** One limit's bucket now: nothing was charged to look. */
export interface BucketView {
  name: string;
  allowed: boolean;
  remaining: number;
  limit: number;
  retryAfterMs: number | null;
  resetMs: number;
}

export type InspectResult =
  | { ok: true; rule: string; id: string; mode: string; limits: BucketView[] }
  | { ok: false; status: number; message: string };

const MAX_PART_CHARS = 1024;

/**
 * The bucket inspector: the key an operator types, made into the rule's bucket key exactly as a
 * request's (the rule's own key function, then the HMAC under the secret when there is one),
 * and peeked in every limit of the rule. The answer names the bucket by its dashboard id only:
 * what was typed is neither echoed nor logged.
 */
export async function inspectBucket(
  policy: CompiledPolicy,
  body: unknown,
  idOf: (key: string) => string,
): Promise<InspectResult> {
  if (!isInspectBody(body))
    return {
      ok: false,
      status: 400,
      message: `The body is { rule: string, parts: { <part>: string } }, each part at most ${MAX_PART_CHARS} characters.`,
    };
  const rule = policy.rule(body.rule);
  if (rule === undefined) return { ok: false, status: 404, message: 'The policy has no rule of that name.' };
  const given = (part: string): string | undefined => {
    const value = body.parts[part];
    return value === undefined || value === '' ? undefined : value;
  };
  const headers: Record<string, string> = {};
  for (const part of rule.model.key)
    if (part.startsWith('header:')) {
      const value = given(part);
      if (value !== undefined) headers[part.slice('header:'.length).toLowerCase()] = value;
    }
  const request: DecisionRequest = {
    method: (given('method') ?? 'GET').toUpperCase(),
    path: normalizePath(pathOf(given('path') ?? '/')),
    host: given('host')?.toLowerCase(),
    headers,
    address: given('address'),
  };
  let text: string;
  try {
    text = rule.keyText(request);
  } catch {
    // The only part that can be refused: an address that is none.
    return { ok: false, status: 400, message: 'The address part is not an IP address.' };
  }
  const verdict = await peek(policy, { rule: rule.name, key: text });
  return {
    ok: true,
    rule: rule.name,
    id: idOf(policy.keys.current(text)),
    mode: rule.model.mode,
    limits: verdict.decisions.map((d) => ({
      name: d.name,
      allowed: d.allowed,
      remaining: d.remaining,
      limit: d.limit,
      retryAfterMs: d.retryAfterMs,
      resetMs: d.resetMs,
    })),
  };
}

function isInspectBody(body: unknown): body is InspectBody {
  if (typeof body !== 'object' || body === null) return false;
  const { rule, parts } = body as Partial<InspectBody>;
  if (typeof rule !== 'string' || typeof parts !== 'object' || parts === null || Array.isArray(parts))
    return false;
  return Object.values(parts).every((v) => typeof v === 'string' && v.length <= MAX_PART_CHARS);
}
