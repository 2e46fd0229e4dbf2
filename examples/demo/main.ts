/**
 * A tour of sluice's decisions on the chat example's policy (examples/chat/README.md), on the embedded memory store, with a
 * manual clock so that an hour passes in an instant. Run: `npm run demo`.
 */
import { MemoryStore, createLimiter, manualClock, tokenBucket, type Decision } from '../../src/index.js';

const clock = manualClock(Date.UTC(2026, 0, 1, 9));
const store = new MemoryStore();
const registration = createLimiter({
  name: 'registration',
  rule: tokenBucket({ limit: 5, period: '1h' }),
  store,
  clock,
});
const login = createLimiter({ name: 'login', rule: tokenBucket({ limit: 10, period: '10m' }), store, clock });
const messages = createLimiter({
  name: 'messages',
  rule: tokenBucket({ limit: 30, period: '1m', burst: 10 }),
  store,
  clock,
});
const mutations = createLimiter({
  name: 'mutations',
  rule: tokenBucket({ limit: 60, period: '1m' }),
  store,
  clock,
});

const show = (label: string, d: Decision) =>
  console.log(
    `${label.padEnd(34)} ${d.allowed ? 'admitted' : 'refused '}  remaining ${String(d.remaining).padStart(2)}` +
      (d.allowed ? '' : `  retry after ${d.retryAfterSeconds} s`),
  );

console.log('registration: 5 per hour per IP, burst 5');
for (let i = 1; i <= 6; i++) show(`  attempt ${i} from 198.51.100.7`, registration.takeSync('198.51.100.7'));
clock.advance('12m');
show('  12 minutes later', registration.takeSync('198.51.100.7'));

console.log('\nlogin: 10 per 10 minutes per IP+nick; refusals cost nothing (no debt)');
for (let i = 1; i <= 10; i++) login.takeSync('198.51.100.7|alice');
show('  11th guess', login.takeSync('198.51.100.7|alice'));
show('  12th guess', login.takeSync('198.51.100.7|alice'));
show('  same IP, another nick', login.takeSync('198.51.100.7|bob'));
clock.advance('1m');
show('  one minute later', login.takeSync('198.51.100.7|alice'));

console.log('\nmessages: 30 per minute per user, burst 10 (their own rule, outside the general budget)');
let admitted = 0;
for (let i = 0; i < 12; i++) if (messages.takeSync('user-17').allowed) admitted++;
console.log(`  12 messages at once: ${admitted} admitted`);
show('  the 13th', messages.takeSync('user-17'));
clock.advance('2s');
show('  two seconds later', messages.takeSync('user-17'));

console.log('\nevery other mutating route: 60 per minute per user, one bucket (POST /api/ack included)');
show('  POST /api/ack', mutations.takeSync('user-17'));

console.log(`\nbuckets held by the login rule: ${store.bucketCount('login')} (never more than 2 x 4096)`);
