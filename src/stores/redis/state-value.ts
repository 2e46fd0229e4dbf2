/*
 * How a key's value encodes its state, as every script reads and writes it (Lua spliced by
 * scripts.ts): the algorithm's fields `"<a>:<b>"`, `"<a>:<b>:<c>"` or `"<a>:<b>:<c>:<d>"` (four:
 * a token bucket's state kept under a per-call tier, see algorithms/token-bucket.ts), and for a
 * key a lockout has blocked, its block after a bar: `"<a>:<b>[:<c>[:<d>]]|<blocked until
 * ms>:<block length ms>"`. Versions before lockouts never wrote a bar, and versions before tiers
 * never wrote a fourth field, so their values read as they always did; a value of two or three
 * fields without a bar is read with exactly the work it took before (the fourth is looked for
 * only when the third does not read as a number).
 */

/**
 * Lua reading the algorithm's fields from `v` into the locals `sa`, `sb`, `sc`, `sd` (declared
 * here; `sa` false when absent, `sc` false for two fields, `sd` false for two or three);
 * `unreadable` runs when `v` is a string but not two to four numbers separated by colons.
 */
function readFields(unreadable: string): string {
  return `local sa, sb, sc, sd = false, 0, false, false
if v then
  local c1 = find(v, ':', 1, true)
  if c1 then
    local c2 = find(v, ':', c1 + 1, true)
    sa = tonumber(sub(v, 1, c1 - 1))
    if c2 then
      sb = tonumber(sub(v, c1 + 1, c2 - 1))
      sc = tonumber(sub(v, c2 + 1))
      if not sc then
        local c3 = find(v, ':', c2 + 1, true)
        if c3 then
          sc = tonumber(sub(v, c2 + 1, c3 - 1))
          sd = tonumber(sub(v, c3 + 1))
        end
        if not (sc and sd) then sb = nil end
      end
    else
      sb = tonumber(sub(v, c1 + 1))
    end
    if not (sa and sb) then ${unreadable} end
  end
end
`;
}

/**
 * The reader of a value with a block (a prelude function): the fields before the bar as
 * {@link READ_STATE} reads a value without one, and the block's end and length after it (both
 * nil when they cannot be read). Only called for a value the plain reading failed on: a number
 * never holds a bar, so every value with a block fails it, and one without never gets here
 * unless it is unreadable (then it reads as absent, as before).
 */
export const READ_MARKED = `local function readMarked(whole)
  local bar = find(whole, '|', 1, true)
  if not bar then return false, 0, false, false end
  local bu, bm
  local c = find(whole, ':', bar + 1, true)
  if c then
    bu = tonumber(sub(whole, bar + 1, c - 1))
    bm = tonumber(sub(whole, c + 1))
    if not (bu and bm) then bu, bm = nil, nil end
  end
  local v = sub(whole, 1, bar - 1)
${readFields('sa, sb, sc, sd = false, 0, false, false').replace(/^(?=.)/gm, '  ')}  return sa, sb, sc, sd, bu, bm
end
`;

/**
 * A key's state from its value `v` (MGET's: nil for an absent key or one of another type), spliced
 * into every script: the numbers `sa`, `sb`, `sc`, `sd` read by each algorithm its own way, and the
 * block `bu` (end, ms since the Unix epoch) and `bm` (length in ms), nil for a key never blocked.
 * What cannot be read is absent, and the write that follows repairs it.
 */
export const READ_STATE = `local bu, bm
${readFields('sa, sb, sc, sd, bu, bm = readMarked(v)')}`;

/**
 * The new value of a key from its fields: `"<a>:<b>"` when `nc` is false, `"<a>:<b>:<c>"` when
 * `nd` is, `"<a>:<b>:<c>:<d>"` otherwise. Whole numbers as `%d`: every one is an integer below
 * 2^53. Two fields, the common case, cost the one test they always did.
 */
export const STATE_VALUE = `if nc then
  if nd then value = format('%d:%d:%d:%d', na, nb, nc, nd) else value = format('%d:%d:%d', na, nb, nc) end
else
  value = format('%d:%d', na, nb)
end`;

/** Lua appending a block (its end `until` and length `length`, Lua expressions) to `value`. */
export function appendBlock(until: string, length: string): string {
  return `value = value .. format('|%d:%d', ${until}, ${length})`;
}
