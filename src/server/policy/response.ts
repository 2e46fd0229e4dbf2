/**
 * A rule's own answer to a request over its limit (`response` in the policy): another status
 * (503 or 403 instead of 429) and either the library's problem body with its own wording, or a
 * body of the rule's (text of at most 4 KiB, with its content type). Only the refusal of a
 * limit is rewritten: the rule's 403 for a denied client, its 503 when the store fails and its
 * 400 keep the library's answers. The body is the policy's text as written: nothing of the
 * request is ever put into it.
 */
import type { Guard, GuardOutcome } from '../../http/guard.js';
import type { HttpResponse } from '../../http/problem.js';
import { isThenable } from '../../http/maybe-sync.js';
import type { ResponseFile } from './file-types.js';

/** The statuses a refusal may be answered with. */
export const RESPONSE_STATUSES = [429, 503, 403] as const;

/** The most a rule's own body may hold, in bytes of UTF-8. */
export const MAX_RESPONSE_BODY_BYTES = 4096;

/**
 * The rule's guard answering its refusals as `response` says; the guard itself when the
 * response is the library's (status 429 and no body of its own).
 */
export function withResponse<Request>(
  guard: Guard<Request>,
  response: ResponseFile | undefined,
): Guard<Request> {
  if (response === undefined) return guard;
  const status = response.status ?? 429;
  if (status === 429 && response.body === undefined) return guard;
  const rewrite = (outcome: GuardOutcome): GuardOutcome => {
    if (outcome.action !== 'respond' || outcome.response.status !== 429) return outcome;
    return { ...outcome, response: rewritten(outcome.response, status, response) };
  };
  const decide: Guard<Request>['decide'] = (request, facts) => {
    const outcome = guard.decide(request, facts);
    return isThenable(outcome) ? (outcome as Promise<GuardOutcome>).then(rewrite) : rewrite(outcome);
  };
  return {
    ...guard,
    check: (request, facts) => Promise.resolve(decide(request, facts)),
    decide,
    delays: guard.delays,
  };
}

/** A 429 with the rule's status, and its body or the library's with that status written in. */
function rewritten(limited: HttpResponse, status: number, response: ResponseFile): HttpResponse {
  if (response.body !== undefined)
    return {
      status,
      headers: { ...limited.headers, 'Content-Type': response.contentType ?? 'text/plain; charset=utf-8' },
      body: response.body,
    };
  // The library's problem body says 429 in its `status` member: it must say what is sent.
  const problem = JSON.parse(limited.body) as { status: number };
  problem.status = status;
  return { status, headers: limited.headers, body: JSON.stringify(problem) };
}

/** What is wrong with a `response` the schema let through, as [field, what]; undefined when nothing. */
export function responseProblem(response: ResponseFile): [string, string] | undefined {
  if (response.body !== undefined && response.problem !== undefined)
    return ['problem', "is left out with a body of the rule's own (the body replaces the problem body)"];
  if (response.contentType !== undefined && response.body === undefined)
    return ['contentType', 'is the type of a body: write body too'];
  if (response.body !== undefined && Buffer.byteLength(response.body) > MAX_RESPONSE_BODY_BYTES)
    return ['body', `must be at most ${MAX_RESPONSE_BODY_BYTES} bytes`];
  return undefined;
}
