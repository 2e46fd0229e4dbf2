/**
 * Cost of finding a request's client key, against a bare `net.isIP` on the same addresses, in
 * the same run.
 *
 *   npm run bench:keys
 *
 * Contenders (each behind `Contender`; one call = one request; 1,024 pre-built requests with
 * random client addresses, cycled, so no string is constant):
 * - isip:            net.isIP(client address)                                  (the baseline)
 * - sluice:          ipKey(addressOf(request).address), request = { peer: '127.0.0.1', headers } with
 *                    a 3-entry X-Forwarded-For `<spoofed>, <spoofed>, <client>` and the default
 *                    trust (loopback): nginx on the same host appended the client (examples/chat/README.md)
 * - sluice_walk3:    3-entry X-Forwarded-For `<client>, 10.0.0.2, 10.0.0.3` with 10.0.0.0/8
 *                    trusted too: the walk parses all three entries
 * - sluice_node:     sluice_walk3 with a Node IncomingMessage shape ({ socket: { remoteAddress }, headers })
 * - sluice_forwarded: the same chain as RFC 7239 Forwarded
 * - sluice_ipv6:     the same with IPv6 client addresses (keyed by /64)
 * - ipaddr:          the same walk written with split/trim and ipaddr.js parse + match
 *                    (why src/keys parses by hand: see src/keys/ip-parse.ts)
 * Figures are the median of batches of 1,000 calls, in ns per call. The target: sluice <= 3x isip.
 * Last line: one JSON object.
 */
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import { Bench } from 'tinybench';
import { createClientAddress, createIpKey } from '../../src/index.js';

const BATCH = 1_000;
const POOL = 1_024;
const TRUSTED = ['127.0.0.0/8', '::1/128', '10.0.0.0/8'];

interface Contender {
  name: string;
  /** One request's work; returns something to keep the optimizer honest. */
  run(i: number): number;
}

/**
 * Headers from Node's HTTP parser are flat strings; template literals make rope (cons) strings,
 * which every character access must unwrap. Flatten, so that the bench reads what a server reads.
 */
const flat = (text: string) => Buffer.from(text, 'latin1').toString('latin1');
const byte = () => (Math.random() * 256) | 0;
const hextet = () => ((Math.random() * 65536) | 0).toString(16);
const v4 = Array.from({ length: POOL }, () => flat(`${1 + (byte() % 223)}.${byte()}.${byte()}.${byte()}`));
const v6 = Array.from({ length: POOL }, () =>
  flat(`2001:db8:${hextet()}:${hextet()}:${hextet()}:${hextet()}:${hextet()}:${hextet()}`),
);
const proxies = '10.0.0.2, 10.0.0.3';
const spoofed = flat('203.0.113.9, 198.51.100.1');
const nginx = v4.map((a) => ({
  peer: '127.0.0.1',
  headers: { 'x-forwarded-for': flat(`${spoofed}, ${a}`) },
}));
const xff = v4.map((a) => ({ peer: '127.0.0.1', headers: { 'x-forwarded-for': flat(`${a}, ${proxies}`) } }));
const xff6 = v6.map((a) => ({ peer: '::1', headers: { 'x-forwarded-for': flat(`${a}, ${proxies}`) } }));
const node = v4.map((a) => ({
  socket: { remoteAddress: '127.0.0.1' },
  headers: { 'x-forwarded-for': flat(`${a}, ${proxies}`) },
}));
const fwd = v4.map((a) => ({
  peer: '127.0.0.1',
  headers: { forwarded: flat(`for=${a};proto=https, for=10.0.0.2, for=10.0.0.3`) },
}));

const defaultAddressOf = createClientAddress();
const addressOf = createClientAddress({ trustedProxies: TRUSTED });
const forwardedOf = createClientAddress({ trustedProxies: TRUSTED, header: 'forwarded' });
const keyOf = createIpKey();
const ranges = TRUSTED.map((cidr) => ipaddr.parseCIDR(cidr));

function ipaddrWalk(peer: string, header: string): string {
  const trusted = (text: string) => {
    let address = ipaddr.parse(text);
    if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress())
      address = (address as ipaddr.IPv6).toIPv4Address();
    return ranges.some((range) => address.kind() === range[0].kind() && address.match(range));
  };
  if (!ipaddr.isValid(peer) || !trusted(peer)) return peer;
  const entries = header.split(',');
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i]!.trim();
    if (!ipaddr.isValid(entry)) return peer;
    if (!trusted(entry) || i === 0) return ipaddr.parse(entry).toString();
  }
  return peer;
}

const contenders: Contender[] = [
  { name: 'isip', run: (i) => net.isIP(v4[i]!) },
  { name: 'sluice', run: (i) => keyOf(defaultAddressOf(nginx[i]!).address).length },
  { name: 'sluice_walk3', run: (i) => keyOf(addressOf(xff[i]!).address).length },
  { name: 'sluice_node', run: (i) => keyOf(addressOf(node[i]!).address).length },
  { name: 'sluice_forwarded', run: (i) => keyOf(forwardedOf(fwd[i]!).address).length },
  { name: 'isip_ipv6', run: (i) => net.isIP(v6[i]!) },
  { name: 'sluice_ipv6', run: (i) => keyOf(addressOf(xff6[i]!).address).length },
  { name: 'ipaddr', run: (i) => ipaddrWalk('127.0.0.1', xff[i]!.headers['x-forwarded-for']).length },
];

// Correctness first: a fast wrong answer is no answer.
for (let i = 0; i < 8; i++) {
  if (keyOf(defaultAddressOf(nginx[i]!).address) !== v4[i]) throw new Error('sluice picked the wrong entry');
  if (keyOf(addressOf(xff[i]!).address) !== v4[i]) throw new Error('sluice picked the wrong entry');
  if (keyOf(forwardedOf(fwd[i]!).address) !== v4[i]) throw new Error('forwarded picked the wrong entry');
  if (ipaddrWalk('127.0.0.1', xff[i]!.headers['x-forwarded-for']) !== v4[i])
    throw new Error('ipaddr walk is wrong');
}

let sink = 0;
const bench = new Bench({ time: 1000, warmupTime: 300 });
for (const contender of contenders) {
  let cursor = 0;
  bench.add(contender.name, () => {
    for (let n = 0; n < BATCH; n++) {
      sink += contender.run(cursor);
      cursor = (cursor + 1) & (POOL - 1);
    }
  });
}
await bench.run();

const ns: Record<string, number> = {};
for (const task of bench.tasks) {
  const result = task.result as { latency?: { p50: number } } | undefined;
  ns[task.name] =
    result?.latency?.p50 === undefined ? 0 : Math.round(((result.latency.p50 * 1e6) / BATCH) * 10) / 10;
}
const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;
console.log(`ns per request (median of batches of ${BATCH}; ${process.version}; ${process.arch})`);
console.table(
  contenders.map((c) => ({ contender: c.name, ns: ns[c.name], 'x isip': ratio(ns[c.name]!, ns.isip!) })),
);
console.log(
  `target: sluice <= 3x isip; measured ${ratio(ns.sluice!, ns.isip!)}x (sink ${sink > 0 ? 'ok' : 'empty'})`,
);
console.log(JSON.stringify({ suite: 'keys', client_address_ns: ns.sluice, isip_ns: ns.isip }));
process.exit(0);
