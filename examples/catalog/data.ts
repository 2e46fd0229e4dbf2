/** The catalog's state, in memory: who a credential belongs to, courses, exports, replays. */
import type { IncomingMessage } from 'node:http';
import { bearer, cookie } from '../shared/http.js';

/** Sessions (cookie `sid`) and bearer tokens, each naming a subject such as `u17`. */
export class Credentials {
  readonly sessions = new Map<string, string>();
  readonly tokens = new Map<string, string>();

  subjectOf(request: IncomingMessage): string | undefined {
    const token = bearer(request);
    if (token !== undefined) return this.tokens.get(token);
    const sid = cookie(request, 'sid');
    return sid === undefined ? undefined : this.sessions.get(sid);
  }
}

export interface Course {
  id: string;
  title: string;
  owner: string;
  version: number;
}

export class Courses {
  readonly byId = new Map<string, Course>();
  /** How many courses were ever created: the business effect the tests count. */
  created = 0;

  create(title: string, owner: string): Course {
    const course = { id: `c${String(++this.created + 100).padStart(3, '0')}`, title, owner, version: 1 };
    this.byId.set(course.id, course);
    return course;
  }
}

export interface StoredResult {
  status: number;
  body: unknown;
  /** The request body the key was first used with: a key names one intent. */
  fingerprint: string;
}
