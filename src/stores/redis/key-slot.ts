/** Redis Cluster's slot count. */
const SLOTS = 16384;

// CRC16-CCITT (XMODEM), the checksum Redis Cluster hashes keys with.
const table = new Uint16Array(256);
for (let i = 0; i < 256; i++) {
  let crc = i << 8;
  for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  table[i] = crc;
}

/**
 * The Redis Cluster slot of `key`, computed as the server does: when the key holds a `{…}` with
 * at least one character inside, only that part (the hash tag) is hashed, so keys that share a
 * tag share a slot and one script may touch them all.
 *
 * @example keySlot('sluice:login:{10.0.0.1}') === keySlot('sluice:signup:{10.0.0.1}') // true
 */
export function keySlot(key: string): number {
  let bytes = Buffer.from(key, 'utf8');
  const open = bytes.indexOf(0x7b);
  if (open !== -1) {
    const close = bytes.indexOf(0x7d, open + 1);
    if (close > open + 1) bytes = bytes.subarray(open + 1, close);
  }
  let crc = 0;
  for (let i = 0; i < bytes.length; i++)
    crc = ((crc << 8) & 0xffff) ^ (table[((crc >> 8) ^ bytes[i]!) & 0xff] as number);
  return crc % SLOTS;
}
