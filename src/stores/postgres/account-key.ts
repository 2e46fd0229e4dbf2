import { randomUUID } from 'node:crypto';

/** A user id and the account bucket it owns, read back from an account key. */
export interface AccountKeyParts {
  readonly userId: string;
  readonly bucket: string;
}

/**
 * Account keys: a string a route's key step can return (for instance `resolveIdentity`'s
 * `accountBucket`), which a limiter passes to its store as any key, and from which the
 * PostgreSQL store reads the user id and the pseudonymous bucket. The store then charges that
 * bucket with the account statement, which links the row to the user, so deleting the user
 * erases it; a plain key would leave a row that no user owns.
 *
 * The marker holds a random value drawn per store instance and NUL characters, so no key built
 * from request data can pass for an account key. The key lives only in this process: the store
 * writes the bucket alone, never the marker or the user id.
 */
export class AccountKeys {
  private readonly prefix = `\0sluice-account\0${randomUUID()}\0`;

  /** The account key of `bucket`, owned by the user whose id (already checked) is `userId`. */
  make(userId: string, bucket: string): string {
    return `${this.prefix}${userId}\0${bucket}`;
  }

  /** The parts of an account key of this store, or undefined for any other key. */
  parse(key: string): AccountKeyParts | undefined {
    if (!key.startsWith(this.prefix)) return undefined;
    const end = key.indexOf('\0', this.prefix.length);
    if (end < 0) return undefined;
    return { userId: key.slice(this.prefix.length, end), bucket: key.slice(end + 1) };
  }
}
