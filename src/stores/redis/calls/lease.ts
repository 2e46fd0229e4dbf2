import type { LeaseGrant } from '../../contract/lease-store.js';
import { leaseScript, leaseScriptSha } from '../lease-script.js';
import { Command, type CallContext, type Pending, type Script, type ScriptCall } from './script-call.js';
import type { Pipeline } from '../pipeline.js';

/*
 * Lease operations: batched with the lease operations queued next to them, in calls of the
 * lease script (see lease-script.ts for its arguments and reply). A request's fields: `subject`
 * its {@link LeaseOperation}.
 */

/** One lease operation waiting for the script. */
export interface LeaseOperation {
  /** True to acquire, false to release. */
  readonly acquire: boolean;
  readonly id: string;
  /** The group's max and ttl as the script's arguments: one array per group, made once. */
  readonly group: readonly [string, string];
}

/** Integers of the reply per operation. */
const LEASE_REPLY_WIDTH = 3;

const LEASES: Script = { source: leaseScript, sha: leaseScriptSha };

const LEASE: ScriptCall = { alone: false, encode, decode };

/**
 * A lease operation on `key`, with the deadline and failures of a take. Resolves to the grant
 * of an acquisition, or whether a release found the lease held.
 */
export function queueLease(
  pipeline: Pipeline,
  op: LeaseOperation,
  key: string,
  now: number,
  slot: number,
): Promise<LeaseGrant | boolean> {
  return pipeline.enqueue(LEASE, key, 1, now, slot, op, 0, undefined, null);
}

function encode(requests: Pending[], context: CallContext): Command {
  const { serverClock, slackMs } = context;
  const deadline = context.startClocks(requests);
  const keys: string[] = [];
  // The groups' values first, each once, then the operations.
  const groups: string[] = [];
  const refs = new Map<readonly [string, string], number>();
  const ops: string[] = [];
  for (const request of requests) {
    keys.push(request.key);
    const op = request.subject as LeaseOperation;
    pushOperation(ops, groups, refs, op, serverClock ? undefined : request.now);
  }
  const args: string[] = [
    serverClock ? '' : String(slackMs),
    context.serverDeadline(deadline),
    String(groups.length),
  ];
  for (let i = 0; i < groups.length; i++) args.push(groups[i]!);
  for (let i = 0; i < ops.length; i++) args.push(ops[i]!);
  const replyLength = 1 + LEASE_REPLY_WIDTH * requests.length;
  return new Command(requests, keys, args, replyLength, LEASES, deadline);
}

/**
 * Appends an operation's arguments, its group's values the first time the call names the
 * group; `now` only on the app's clock.
 */
function pushOperation(
  args: string[],
  groups: string[],
  refs: Map<readonly [string, string], number>,
  op: LeaseOperation,
  now: number | undefined,
): void {
  let ref = refs.get(op.group);
  if (ref === undefined) {
    ref = 4 + groups.length;
    refs.set(op.group, ref);
    groups.push(op.group[0], op.group[1]);
  }
  args.push(String(op.acquire ? ref : -ref), op.id);
  if (now !== undefined) args.push(String(now));
}

/** `[now, then per operation: status, held, resetMs]`. */
function decode(requests: readonly Pending[], reply: readonly unknown[]): void {
  for (let i = 0; i < requests.length; i++) {
    const request = requests[i]!;
    const answer = answerAt(reply, 1 + i * LEASE_REPLY_WIDTH, request.subject as LeaseOperation);
    request.resolve(answer as never);
  }
}

/** An operation's answer from the reply at `o`: a grant for an acquisition, true or false for a release. */
function answerAt(reply: readonly unknown[], o: number, op: LeaseOperation): LeaseGrant | boolean {
  const status = Number(reply[o]);
  if (!op.acquire) return status === 1;
  return {
    acquired: status === 0,
    held: Number(reply[o + 1]),
    retryAfterMs: status,
    resetMs: Number(reply[o + 2]),
  };
}
