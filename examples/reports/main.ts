/**
 * Runs the report API example (examples/reports/README.md): `npm run example:reports`. AUTH_SECRET (32+ bytes) from
 * the environment; AUTH_SECRET_PREVIOUS, if set, keeps the last generation erasable. A demo key
 * `demo-key` with a daily limit of 100 and a session `sid=demo` of user 1 are set up.
 */
import { randomBytes } from 'node:crypto';
import { serve } from '../shared/serve.js';
import { ApiKeys, MemorySessions, Users } from './data.js';
import { createApp } from './app.js';

const authSecrets = [process.env.AUTH_SECRET ?? randomBytes(32).toString('base64url')];
if (process.env.AUTH_SECRET_PREVIOUS) authSecrets.push(process.env.AUTH_SECRET_PREVIOUS);
const apiKeys = new ApiKeys();
apiKeys.add('demo-key', { id: 1, dailyLimit: 100 });
const sessions = new MemorySessions();
sessions.byId.set('demo', { userId: 1 });
const users = new Users();
users.ids.add(1);

await serve(createApp({ authSecrets, apiKeys, sessions, users }).server, 'reports', 8422);
