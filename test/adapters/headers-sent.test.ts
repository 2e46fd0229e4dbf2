/**
 * When writing the outcome itself fails (here: an application flushed its headers before the
 * limit ran), `sluice/node` and `sluice/express` report it through `onError`, end the connection
 * and leave no rejected promise behind.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type RequestListener } from 'node:http';
import express from 'express';
import { MemoryStore, createLimiter, manualClock, tokenBucket } from '../../src/index.js';
import { rateLimit as expressRateLimit } from '../../src/adapters/express/index.js';
import { rateLimit as nodeRateLimit } from '../../src/adapters/node/index.js';
import { socketApp } from '../../src/testing/index.js';

function options(reported: unknown[]) {
  return {
    limits: createLimiter({
      name: 'flushed',
      rule: tokenBucket({ limit: 5, period: '1m' }),
      store: new MemoryStore(),
      clock: manualClock(0),
    }),
    key: () => 'k',
    onError: (error: unknown) => void reported.push(error),
  };
}

const listeners: [string, (reported: unknown[]) => RequestListener][] = [
  [
    'node:http',
    (reported) => {
      const limit = nodeRateLimit(options(reported));
      return async (req, res) => {
        res.flushHeaders();
        if (!(await limit(req, res))) return;
        res.end('ok');
      };
    },
  ],
  [
    'express',
    (reported) => {
      const app = express();
      app.use((_req, res, next) => {
        res.flushHeaders();
        next();
      });
      app.use(expressRateLimit(options(reported)));
      app.get('/', (_req, res) => void res.end('ok'));
      return app;
    },
  ],
];

describe('headers already sent when the limit writes its own', () => {
  for (const [name, listener] of listeners) {
    it(`${name}: the failure is reported, the connection ended, no promise left rejected`, async () => {
      const rejections: unknown[] = [];
      const recordRejection = (reason: unknown) => void rejections.push(reason);
      process.on('unhandledRejection', recordRejection);
      try {
        const reported: unknown[] = [];
        const app = await socketApp(createServer(listener(reported)));
        try {
          await app.request('GET', '/').catch(() => undefined); // the body never completes
        } finally {
          await app.close();
        }
        await new Promise((resolve) => setImmediate(resolve));
        assert.deepEqual(rejections, []);
        assert.equal(reported.length, 1);
        assert.equal((reported[0] as { code?: string }).code, 'ERR_HTTP_HEADERS_SENT');
      } finally {
        process.off('unhandledRejection', recordRejection);
      }
    });
  }
});
