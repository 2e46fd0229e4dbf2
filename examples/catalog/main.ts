/**
 * Runs the catalog example of the tutorial: `npm run example:catalog`. Alice (`u17`) signs in
 * with the cookie `sid=alice-session` or the header `Authorization: Bearer alice-token`: one
 * subject, one write budget of 10 tokens refilling one per second.
 */
import { serve } from '../shared/serve.js';
import { createApp } from './app.js';
import { Credentials } from './data.js';

const credentials = new Credentials();
credentials.sessions.set('alice-session', 'u17');
credentials.tokens.set('alice-token', 'u17');

await serve(createApp({ credentials }).server, 'catalog', 8423);
