/**
 * The catalog of the tutorial on plain node:http. For a protected write the order is:
 * identify the subject (401) → the write budget (429: nothing applied) → the body → the
 * Idempotency-Key registry → rights and If-Match → the business change. A replay with the same
 * Idempotency-Key returns the stored result, and still costs a token: deduplication protects the
 * effect, not the server's work.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { rateLimit, sendError } from '../../src/adapters/node/index.js';
import { clientAddress, ipKey, isSluiceError, systemClock, type Clock, type Store } from '../../src/index.js';
import { HttpError, readJson, sendJson, sendProblem } from '../shared/http.js';
import { Courses, Credentials, type StoredResult } from './data.js';
import { catalogLimits, writeProblem } from './policy.js';

export interface CatalogOptions {
  /** Inject a manual clock in tests. @default Date.now */
  clock?: Clock;
  /** Where the budgets live. @default a MemoryStore */
  store?: Store;
  credentials?: Credentials;
  courses?: Courses;
}

const WRITES = ['POST', 'PUT', 'PATCH', 'DELETE'];

type Outcome = Omit<StoredResult, 'fingerprint'>;

export function createApp(options: CatalogOptions = {}) {
  const { clock = systemClock, store, credentials = new Credentials(), courses = new Courses() } = options;
  const limits = catalogLimits(clock, store);
  const exports = new Map<string, { status: string }>();
  const replays = new Map<string, StoredResult>(); // `${subject} ${Idempotency-Key}` → result

  // The subject, not the credential: rotating sessions or tokens buys no new attempts.
  const writeLimit = rateLimit({
    limits: limits.writes,
    methods: WRITES,
    key: (request) => {
      const subject = credentials.subjectOf(request);
      return subject === undefined ? undefined : `subject:${subject}`;
    },
    problem: writeProblem,
    // The contract publishes no remaining budget: it would read as a promise of writes.
    headers: 'none',
  });
  const readLimit = rateLimit({
    limits: limits.reads,
    methods: ['GET', 'HEAD'],
    key: (request) => {
      const subject = credentials.subjectOf(request);
      return subject === undefined ? `ip:${ipKey(clientAddress(request).address)}` : `subject:${subject}`;
    },
    headers: 'none',
  });

  /**
   * Runs `operation` once per Idempotency-Key and subject; a replay gets the stored result.
   * Nothing is awaited between the lookup and the store, so two concurrent replays cannot both
   * create. Without a key the operation simply runs.
   */
  function once(request: IncomingMessage, subject: string, input: unknown, operation: () => Outcome) {
    const key = request.headers['idempotency-key'];
    if (typeof key !== 'string') return { ...operation(), replayed: false };
    const id = `${subject} ${key}`;
    const fingerprint = JSON.stringify(input);
    const stored = replays.get(id);
    if (stored === undefined) {
      const result = { ...operation(), fingerprint };
      replays.set(id, result);
      return { ...result, replayed: false };
    }
    if (stored.fingerprint !== fingerprint)
      throw new HttpError(422, 'idempotency_key_reused', 'Idempotency-Key was used with another body');
    return { ...stored, replayed: true };
  }

  async function write(request: IncomingMessage, response: ServerResponse, method: string, path: string) {
    const subject = credentials.subjectOf(request);
    if (subject === undefined) throw new HttpError(401, 'unauthenticated', 'Sign in first');
    // The budget before anything else: a 429 means the operation was not applied.
    if (!(await writeLimit(request, response))) return;
    const input = await readJson(request);
    const reply = (r: { status: number; body: unknown; replayed: boolean }) => {
      if (r.replayed) response.setHeader('Idempotent-Replayed', 'true');
      sendJson(response, r.status, r.body);
    };
    if (method === 'POST' && path === '/courses') {
      const title = titleOf(input.title);
      return reply(
        once(request, subject, input, () => ({ status: 201, body: courses.create(title, subject) })),
      );
    }
    if (method === 'POST' && path === '/exports') {
      return reply(
        once(request, subject, input, () => {
          const id = `e${exports.size + 1}`;
          exports.set(id, { status: 'queued' });
          return { status: 202, body: { id, status: 'queued' } };
        }),
      );
    }
    const match = /^\/courses\/([\w-]+)$/.exec(path);
    if (method === 'PUT' && match) {
      // A free token grants no right: scope and version are still checked.
      const course = courses.byId.get(match[1] as string);
      if (course === undefined) throw new HttpError(404, 'not_found', 'No such course');
      if (course.owner !== subject) throw new HttpError(403, 'forbidden', 'Not your course');
      if (request.headers['if-match'] !== `"v${course.version}"`)
        throw new HttpError(412, 'version_mismatch', 'The course has changed');
      course.title = titleOf(input.title);
      course.version++;
      response.setHeader('ETag', `"v${course.version}"`);
      return sendJson(response, 200, course);
    }
    throw new HttpError(404, 'not_found', 'Not found');
  }

  async function read(request: IncomingMessage, response: ServerResponse, path: string) {
    if (!(await readLimit(request, response))) return;
    if (path === '/courses') return sendJson(response, 200, { courses: [...courses.byId.values()] });
    const match = /^\/exports\/([\w-]+)$/.exec(path);
    const job = match ? exports.get(match[1] as string) : undefined;
    if (job !== undefined) return sendJson(response, 200, job);
    throw new HttpError(404, 'not_found', 'Not found');
  }

  const server = createServer((request, response) => {
    const method = request.method ?? 'GET';
    const path = new URL(request.url ?? '/', 'http://catalog').pathname;
    const handled = WRITES.includes(method)
      ? write(request, response, method, path)
      : read(request, response, path);
    handled.catch((error: unknown) => {
      if (response.headersSent) return void response.destroy();
      if (error instanceof HttpError) return sendProblem(response, error);
      // sluice's errors: a failing store is a 503 (rate_limit_unavailable), never a 429.
      if (!isSluiceError(error)) console.error('catalog: unexpected error', (error as Error)?.name);
      sendError(response, error);
    });
  });
  return { server, limits, courses, credentials };
}

function titleOf(value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '' || value.length > 200)
    throw new HttpError(400, 'invalid_form', 'A course needs a title');
  return value.trim();
}
