import { createHash } from 'node:crypto';

/**
 * Leases in Redis: per key a sorted set, one member per lease held (its id), scored by its
 * expiry in ms. One script serves acquisitions and releases, batched like takes (several keys
 * per call under load, one round trip each), each operation atomic since the script runs alone:
 *
 * - acquire: drop the members whose expiry has passed (`ZREMRANGEBYSCORE`), count the rest
 *   (`ZCARD`); below `max`, add the lease with its expiry and set the key's TTL to the lease's
 *   (the latest expiry of the set: every lease in it was granted no later), so a key whose
 *   leases all ended vanishes, however many processes crashed. On the app's clock, a clock set
 *   back by more than the slack could end an older lease early: the slack covers ordinary skew;
 * - release: drop the expired members, then `ZREM` the lease: 1 when it was held, 0 when it was
 *   not (released already or expired). Redis deletes a sorted set that becomes empty.
 *
 * Layout (all strings; `KEYS`: one per operation):
 * - `ARGV[1]`: empty on the server's clock (the script reads `TIME` once); otherwise the app's
 *   clock decides, every operation carries its `now`, and this is the extra TTL in ms.
 * - `ARGV[2]`: on the server's clock the call's deadline (ms of the server's clock): a call that
 *   starts after it changes nothing and replies `[now, -4]`, as the decision script does.
 * - `ARGV[3]`: `S`, the number of group values that follow (`ARGV[4 .. 3 + S]`): each lease
 *   group of the call once, its `max` and its ttl in ms.
 * - then per operation: `ref`, the index in ARGV of its group's `max`, positive to acquire and
 *   negated to release; the lease id; and on the app's clock its `now`. Few arguments: each
 *   costs the client and Redis a little on every call.
 *
 * Reply: `[now, then per operation: status, held, resetMs]`. Acquire: status 0 granted, else the
 * ms until the earliest lease held expires (refused); `held` the leases held after it; `resetMs`
 * until the latest expires. Release: status 1 released or 0 not held, then 0, 0.
 *
 * A key of another type (a rule's bucket under the same name, written by a process that binds the
 * name otherwise) is deleted and read as empty: the key is in the store's own prefix.
 */
export const leaseScript = `local call = redis.call
local pcall = redis.pcall
local tonumber = tonumber
local argv = ARGV
local keys = KEYS
local slack = tonumber(argv[1])
local caller = slack ~= nil
local now = 0
if not caller then
  slack = 0
  local t = call('TIME')
  local us = tonumber(t[2])
  now = tonumber(t[1]) * 1000 + (us - us % 1000) / 1000
  local deadline = tonumber(argv[2])
  if deadline and now > deadline then return { now, -4 } end
end
local reply = { now }
local r = 1
-- The groups' max and ttl, each group once, as numbers at their index in ARGV.
local a = 4 + tonumber(argv[3])
local P = {}
for x = 4, a - 1 do P[x] = tonumber(argv[x]) end
for i = 1, #keys do
  local key = keys[i]
  local ref = tonumber(argv[a])
  local id = argv[a + 1]
  a = a + 2
  local acquire = ref > 0
  if not acquire then ref = -ref end
  local max = P[ref]
  local ttl = P[ref + 1]
  local t = now
  if caller then
    t = tonumber(argv[a])
    a = a + 1
  end
  local dropped = pcall('ZREMRANGEBYSCORE', key, '-inf', t)
  if type(dropped) == 'table' and dropped.err then call('DEL', key) end
  if acquire then
    local held = call('ZCARD', key)
    if held < max then
      -- The new lease is the last to expire (the leases before it were granted no later), so
      -- the key's TTL is its ttl: no read of the set's end on the hot path.
      call('ZADD', key, t + ttl, id)
      call('PEXPIRE', key, ttl + slack)
      reply[r + 1] = 0
      reply[r + 2] = held + 1
      reply[r + 3] = ttl
    else
      local first = tonumber(call('ZRANGE', key, 0, 0, 'WITHSCORES')[2])
      local last = tonumber(call('ZRANGE', key, -1, -1, 'WITHSCORES')[2])
      reply[r + 1] = first - t
      reply[r + 2] = held
      reply[r + 3] = last - t
    end
  else
    reply[r + 1] = call('ZREM', key, id)
    reply[r + 2] = 0
    reply[r + 3] = 0
  end
  r = r + 3
end
return reply
`;

/** SHA1 of {@link leaseScript}, for EVALSHA. */
export const leaseScriptSha: string = createHash('sha1').update(leaseScript).digest('hex');
