/**
 * Runs the access-policy example (examples/policies/README.md):
 * `node --import tsx examples/policies/main.ts`. A partner key `demo-partner` skips the limit.
 */
import { serve } from '../shared/serve.js';
import { createApp } from './app.js';

await serve(createApp({ partnerKeys: new Set(['demo-partner']) }).server, 'policies', 8424);
