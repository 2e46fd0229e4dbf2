/**
 * The HTTP conformance suite against `sluice/fetch` on a real socket, served by the runtime
 * running the file: node in `npm test`, and Bun and Deno through test/runtimes/.
 */
import { httpConformance } from '../../src/testing/index.js';
import { fetchApp, fetchHeader } from './fetch-app.js';
import { runtimeName, serveFetch } from './fetch-serve.js';

httpConformance({
  name: `fetch on ${runtimeName}`,
  header: fetchHeader,
  start: async (spec) => serveFetch(fetchApp(spec)),
  findsClientAddress: true,
  countOnly: true,
  delays: true,
});
