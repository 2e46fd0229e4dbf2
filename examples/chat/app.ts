/**
 * The chat service on plain node:http, with every limit in the place its policy gives it
 * (examples/chat/README.md):
 *
 * - registration (5/h per IP) and login (30/10 min per IP, then 10/10 min per IP + nick, as a
 *   cascade) run in their handlers, after the form is validated and before the expensive or
 *   guessable step (invite code; storage and password hashing);
 * - the general budget (60/min per user) runs right after the session check, before the body
 *   is read: parsing the body is the work it exists to refuse;
 * - messages (30/min per user, burst 10) run last, after the form and the rights check, and are
 *   not charged to the general budget.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { rateLimit, sendError, sendRateLimited } from '../../src/adapters/node/index.js';
import {
  compositeKey,
  ipKey,
  isSluiceError,
  normalizeLogin,
  systemClock,
  type Clock,
} from '../../src/index.js';
import { HttpError, bearer, readJson, sendJson, sendProblem } from '../shared/http.js';
import { chatLimits, clientAddressOf, type ChatLimits } from './policy.js';
import {
  MemoryUsers,
  inviteCode,
  scryptHasher,
  type InviteChecker,
  type PasswordHasher,
  type UserStore,
} from './services.js';

export interface ChatOptions {
  /** Inject a manual clock in tests, so that they move time instead of sleeping. @default Date.now */
  clock?: Clock;
  users?: UserStore;
  hasher?: PasswordHasher;
  invites?: InviteChecker;
  /** The access log. It gets method, path and status: never a nick, never an address. */
  log?: (line: string) => void;
}

export interface ChatApp {
  server: Server;
  limits: ChatLimits;
}

/** Channels a user may post to; `announcements` exists but is read-only for users. */
const writable = new Set(['general', 'random']);
const channels = new Set([...writable, 'announcements']);

export function createApp(options: ChatOptions = {}): ChatApp {
  const {
    clock = systemClock,
    users = new MemoryUsers(),
    hasher = scryptHasher,
    invites = inviteCode(process.env.INVITE_CODE ?? 'welcome'),
    log = (line: string) => console.log(line),
  } = options;
  const limits = chatLimits(clock);
  const sessions = new Map<string, string>(); // session token → user id
  const messages: { channel: string; text: string; from: string }[] = [];
  const userOf = (request: IncomingMessage) => sessions.get(bearer(request) ?? '');

  // One bucket per user for every non-public route except GET; POST /api/messages has its own.
  const general = rateLimit({
    limits: limits.mutations,
    // No session here would be our bug (the 401 comes first): undefined is a 500, never a pass.
    key: (request) => {
      const userId = userOf(request);
      return userId === undefined ? undefined : `user:${userId}`;
    },
    methods: ['POST', 'PUT', 'PATCH', 'DELETE'],
    exclude: ['POST /api/messages'],
  });

  async function register(request: IncomingMessage, response: ServerResponse): Promise<void> {
    // 1. The form first: a malformed form is a 400 and costs nothing (validation is cheap,
    // and a broken client should not spend a user's registrations).
    const form = await readJson(request);
    const nick = checkNick(form.nick);
    const password = text(form.password, 8, 256, 'password');
    const invite = text(form.invite, 1, 64, 'invite');
    // 2. The limit before the invite check: otherwise codes are guessed by uncounted requests.
    const decision = await limits.registration.take(ipKey(clientAddressOf(request).address));
    if (!decision.allowed) return sendRateLimited(response, decision);
    // 3. The code, and only then nick_taken: without a code, nicks cannot be probed.
    if (!(await invites.check(invite))) throw new HttpError(403, 'invalid_invite', 'Invalid invite code');
    if ((await users.find(nick)) !== undefined) throw new HttpError(409, 'nick_taken', 'Nick is taken');
    const user = await users.create(nick, await hasher.hash(password));
    sendJson(response, 201, { id: user.id });
  }

  async function login(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const form = await readJson(request);
    const nick = checkNick(form.nick);
    const password = text(form.password, 1, 256, 'password');
    // Per IP, then per IP + nick, before storage and hashing: brute force must not order work
    // from the server, and rotating nicks from one address runs into the per-IP budget.
    const ip = ipKey(clientAddressOf(request).address);
    const decision = await limits.login.take([ip, compositeKey([ip, nick])]);
    if (!decision.allowed) return sendRateLimited(response, decision.decisions);
    const user = await users.find(nick);
    if (user === undefined || !(await hasher.verify(password, user.passwordHash)))
      throw new HttpError(401, 'invalid_credentials', 'Wrong nick or password');
    const token = randomBytes(24).toString('base64url');
    sessions.set(token, user.id);
    sendJson(response, 200, { token });
  }

  async function postMessage(request: IncomingMessage, response: ServerResponse, userId: string) {
    const form = await readJson(request);
    const channel = text(form.channel, 1, 64, 'channel');
    const body = text(form.text, 1, 2000, 'text');
    if (!channels.has(channel)) throw new HttpError(404, 'no_such_channel', 'No such channel');
    if (!writable.has(channel)) throw new HttpError(403, 'forbidden', 'Channel is read-only');
    // Last, after the form and the rights: the documented order of the chat protocol.
    const decision = await limits.messages.take(`user:${userId}`);
    if (!decision.allowed) return sendRateLimited(response, decision);
    messages.push({ channel, text: body, from: userId });
    sendJson(response, 201, { id: messages.length });
  }

  async function route(request: IncomingMessage, response: ServerResponse, path: string): Promise<void> {
    const method = request.method ?? 'GET';
    if (method === 'POST' && path === '/api/register') return register(request, response);
    if (method === 'POST' && path === '/api/login') return login(request, response);
    const userId = userOf(request);
    // 401 comes first: the general limit needs the session's user.
    if (userId === undefined) throw new HttpError(401, 'unauthenticated', 'Session required');
    // Right after the session check, before the body is read. Reads pass uncharged.
    if (!(await general(request, response))) return;
    if (method === 'GET' && path === '/api/messages') return sendJson(response, 200, { messages });
    if (method === 'POST' && path === '/api/messages') return postMessage(request, response, userId);
    if (method === 'POST' && path === '/api/ack') {
      await readJson(request); // acknowledgements arrive in batches: { ids: [...] }
      return sendJson(response, 204);
    }
    if (method === 'PUT' && path === '/api/profile') {
      await readJson(request);
      return sendJson(response, 204);
    }
    throw new HttpError(404, 'not_found', 'Not found');
  }

  const server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://chat').pathname;
    route(request, response, path)
      .catch((error: unknown) => fail(response, error))
      .finally(() => log(`${request.method} ${path} ${response.statusCode}`));
  });
  return { server, limits };
}

/** The nick as the user lookup sees it (trim, lower case, NFKC); a non-string is a 400. */
function checkNick(value: unknown): string {
  const nick = normalizeLogin(value);
  if (nick.length > 32) throw new HttpError(400, 'invalid_form', 'Nick is too long');
  return nick;
}

function text(value: unknown, min: number, max: number, field: string): string {
  if (typeof value !== 'string' || value.length < min || value.length > max)
    throw new HttpError(400, 'invalid_form', `Invalid ${field}`);
  return value;
}

function fail(response: ServerResponse, error: unknown): void {
  if (response.headersSent) return void response.destroy();
  if (error instanceof HttpError) return sendProblem(response, error);
  // sluice's own errors: 400 for a nick that is not a string, 503 for a failing store.
  if (isSluiceError(error)) return sendError(response, error);
  // The message may quote user input: log the kind of error only.
  console.error('chat: unexpected error', error instanceof Error ? error.name : typeof error);
  sendError(response, error);
}
