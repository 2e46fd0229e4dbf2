/**
 * In-memory stand-ins for the tables the report API reads: `api_keys`, the Auth.js sessions and
 * `users`. The limits do not care where these live; tests pass their own to count or to fail.
 */
import { createHash } from 'node:crypto';

export interface ApiKeyRow {
  id: number;
  /** `api_keys.daily_limit`. */
  dailyLimit: number;
  revoked?: boolean;
}

/** API keys by their SHA-256, as a database keeps them: the key text is never stored. */
export class ApiKeys {
  private readonly rows = new Map<string, ApiKeyRow>();

  add(key: string, row: ApiKeyRow): void {
    this.rows.set(digest(key), row);
  }

  find(key: string): ApiKeyRow | undefined {
    return this.rows.get(digest(key));
  }
}

function digest(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** A server-side session; `userId` may be missing in an incomplete one. */
export interface Session {
  userId?: number;
}

export interface SessionStore {
  get(sid: string): Promise<Session | null>;
}

export class MemorySessions implements SessionStore {
  readonly byId = new Map<string, Session>();

  async get(sid: string): Promise<Session | null> {
    return this.byId.get(sid) ?? null;
  }
}

/** The `users` table as the report API needs it: whether a user exists, and deleting one. */
export interface UserDirectory {
  exists(id: number): Promise<boolean>;
  delete(id: number): Promise<void>;
}

export class Users implements UserDirectory {
  readonly ids = new Set<number>();

  async exists(id: number): Promise<boolean> {
    return this.ids.has(id);
  }

  async delete(id: number): Promise<void> {
    this.ids.delete(id);
  }
}
