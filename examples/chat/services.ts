/**
 * What the chat's handlers call after the limits: user storage, password hashing and the
 * invite check. The in-memory versions serve `npm run example:chat`; tests wrap them to count
 * calls, which is how they prove a refused attempt ordered no work.
 */
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

export interface User {
  id: string;
  nick: string;
  passwordHash: string;
}

export interface UserStore {
  find(nick: string): Promise<User | undefined>;
  create(nick: string, passwordHash: string): Promise<User>;
}

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  verify(password: string, hash: string): Promise<boolean>;
}

export interface InviteChecker {
  check(code: string): Promise<boolean>;
}

export class MemoryUsers implements UserStore {
  private readonly byNick = new Map<string, User>();

  async find(nick: string): Promise<User | undefined> {
    return this.byNick.get(nick);
  }

  async create(nick: string, passwordHash: string): Promise<User> {
    const user = { id: `u${this.byNick.size + 1}`, nick, passwordHash };
    this.byNick.set(nick, user);
    return user;
  }
}

const scryptAsync = promisify(scrypt) as (password: string, salt: Buffer, length: number) => Promise<Buffer>;

/** scrypt from node:crypto, standing in for argon2: deliberately expensive, like the real one. */
export const scryptHasher: PasswordHasher = {
  async hash(password) {
    const salt = randomBytes(16);
    const hash = await scryptAsync(password, salt, 32);
    return `${salt.toString('base64url')}.${hash.toString('base64url')}`;
  },
  async verify(password, stored) {
    const [salt = '', hash = ''] = stored.split('.');
    const expected = Buffer.from(hash, 'base64url');
    const actual = await scryptAsync(password, Buffer.from(salt, 'base64url'), 32);
    return expected.length === actual.length && timingSafeEqual(expected, actual);
  },
};

/** One shared invite code, e.g. from the environment. */
export function inviteCode(code: string): InviteChecker {
  return { check: async (offered) => offered === code };
}
