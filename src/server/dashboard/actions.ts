import type { CompiledPolicy } from '../policy/compile.js';
import type { ServerLog } from '../serve/log.js';

/** Bucket ids whose key the dashboard can act on: the ids it has shown lately. */
const KNOWN = 1024;

/**
 * The keys behind the bucket ids the dashboard showed lately (refused ones, and those the
 * inspector made), so that an operator can reset a bucket by the id on the page: the page never
 * holds a key. At most {@link KNOWN} are kept, the least recently seen dropped first; a heavy
 * offender is seen again at each refusal, so the ids of the top offenders stay. The keys stay in
 * this process's memory (as the store holds them) and are never sent or logged.
 */
export class KnownBuckets {
  private readonly keys = new Map<string, string>();

  /** Records `id` as the id of `key` and returns it. */
  remember(id: string, key: string): string {
    // Deleted first so that a key seen again moves to the newest end of the map's order.
    this.keys.delete(id);
    this.keys.set(id, key);
    if (this.keys.size > KNOWN) this.keys.delete(this.keys.keys().next().value!);
    return id;
  }

  keyOf(id: string): string | undefined {
    return this.keys.get(id);
  }
}

/** What the dashboard's reset and unblock buttons send. */
export interface BucketActionBody {
  rule: string;
  /** The bucket's id, as the page shows it. */
  id: string;
  action: 'reset' | 'unblock';
}

export type BucketActionResult =
  | { ok: true; rule: string; id: string; action: BucketActionBody['action']; limits: number }
  | { ok: false; status: number; message: string };

/**
 * Resets or unblocks a bucket by its id, in every limit of its rule (`Limiter.reset`,
 * `Limiter.unblock`: the key is forgotten whole, a lockout and its escalation with it), and
 * writes an audit line to the server's log with the rule, the action and the bucket's id only,
 * never its key.
 */
export async function bucketAction(
  policy: CompiledPolicy,
  body: unknown,
  known: KnownBuckets,
  log: ServerLog | undefined,
): Promise<BucketActionResult> {
  if (!isActionBody(body))
    return {
      ok: false,
      status: 400,
      message: 'The body is { rule: string, id: string, action: "reset" or "unblock" }.',
    };
  const rule = policy.rule(body.rule);
  if (rule === undefined) return { ok: false, status: 404, message: 'The policy has no rule of that name.' };
  const key = known.keyOf(body.id);
  if (key === undefined)
    return {
      ok: false,
      status: 404,
      message:
        'That bucket id was not shown lately (the server keeps the last ones refused or inspected): find it with the bucket inspector first.',
    };
  for (const limiter of rule.limiters)
    await (body.action === 'unblock' ? limiter.unblock(key) : limiter.reset(key));
  log?.info(
    { event: `bucket-${body.action}`, rule: rule.name, bucket: body.id, limits: rule.limiters.length },
    `${body.action === 'reset' ? 'bucket reset' : 'bucket unblocked'} from the dashboard`,
  );
  return { ok: true, rule: rule.name, id: body.id, action: body.action, limits: rule.limiters.length };
}

function isActionBody(body: unknown): body is BucketActionBody {
  if (typeof body !== 'object' || body === null) return false;
  const { rule, id, action } = body as Partial<BucketActionBody>;
  return (
    typeof rule === 'string' &&
    typeof id === 'string' &&
    id.length <= 64 &&
    (action === 'reset' || action === 'unblock')
  );
}
