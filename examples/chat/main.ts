/** Runs the chat example (examples/chat/README.md): `npm run example:chat` (PORT, INVITE_CODE from the environment). */
import { serve } from '../shared/serve.js';
import { createApp } from './app.js';

await serve(createApp().server, 'chat', 8421);
