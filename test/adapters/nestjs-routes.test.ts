/**
 * `sluice/nestjs` beyond the conformance suite: which limits a route passes (the module's, the
 * controller's, its own, and what `@SkipRateLimit()` leaves out), the module built by a factory,
 * the guard built by hand, and options refused when a class is defined.
 */
import 'reflect-metadata';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import {
  Controller,
  Get,
  Injectable,
  Module,
  type ExecutionContext,
  type ModuleMetadata,
  type Type,
} from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import type { INestApplication } from '@nestjs/common';
import { MemoryStore, createLimiter, manualClock, tokenBucket, type Limiter } from '../../src/index.js';
import {
  RateLimit,
  RateLimitGuard,
  RateLimitModule,
  SkipRateLimit,
  type RateLimitOptions,
} from '../../src/adapters/nestjs/index.js';

function limiter(name: string, limit: number): Limiter {
  return createLimiter({
    name,
    rule: tokenBucket({ limit, period: '1m' }),
    store: new MemoryStore(),
    clock: manualClock(Date.UTC(2026, 0, 1)),
  });
}

const byClient = (limits: Limiter): RateLimitOptions<unknown> => ({ limits, key: () => 'client-1' });

/** Starts `app` on a loopback port, runs `use` with a GET helper, and closes it. */
async function serving(
  app: INestApplication,
  use: (get: (path: string) => Promise<{ status: number; policy: string | null }>) => Promise<void>,
) {
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  try {
    await use(async (path) => {
      const response = await fetch(`http://127.0.0.1:${port}${path}`, {
        signal: AbortSignal.timeout(10_000),
      });
      await response.arrayBuffer();
      return { status: response.status, policy: response.headers.get('ratelimit-policy') };
    });
  } finally {
    await app.close();
  }
}

async function appOf(controllers: Type[], imports: ModuleMetadata['imports'] = []) {
  @Module({
    imports,
    controllers,
    providers: [{ provide: APP_GUARD, useClass: RateLimitGuard }],
  })
  class App {}
  return NestFactory.create(App, { logger: false });
}

describe('sluice/nestjs: the limits of a route', () => {
  it('a route passes the module limit, then its controller limit, then its own; the first refusal answers, the earlier ones keep their charge', async () => {
    const everywhere = limiter('everywhere', 10);
    const controller = limiter('controller', 10);
    const own = limiter('own', 1);

    @Controller('api')
    @RateLimit(byClient(controller))
    class Api {
      @Get('limited')
      @RateLimit(byClient(own))
      limited() {
        return 'ok';
      }

      @Get('open')
      open() {
        return 'ok';
      }
    }

    const app = await appOf([Api], [RateLimitModule.forRoot(byClient(everywhere))]);
    await serving(app, async (get) => {
      // Each limit writes its headers, so the last one's stay, as with middleware one after another.
      assert.deepEqual(await get('/api/limited'), { status: 200, policy: '"own";q=1;w=60' });
      assert.equal((await get('/api/limited')).status, 429);
      assert.equal(
        (await everywhere.peek('client-1')).remaining,
        8,
        'the refused request was charged before',
      );
      assert.equal((await controller.peek('client-1')).remaining, 8);
      assert.equal((await own.peek('client-1')).remaining, 0);
      assert.deepEqual(await get('/api/open'), { status: 200, policy: '"controller";q=10;w=60' });
      assert.equal((await everywhere.peek('client-1')).remaining, 7);
      assert.equal((await own.peek('client-1')).remaining, 0, 'another route is not charged to it');
    });
  });

  it('@SkipRateLimit() leaves the module limit out of a controller or a route, and (false) brings it back', async () => {
    const everywhere = limiter('everywhere', 10);
    const own = limiter('own', 10);

    @Controller('quiet')
    @SkipRateLimit()
    class Quiet {
      @Get()
      @RateLimit(byClient(own))
      quiet() {
        return 'ok';
      }

      @Get('loud')
      @SkipRateLimit(false)
      loud() {
        return 'ok';
      }
    }

    @Controller('health')
    class Health {
      @Get()
      @SkipRateLimit()
      health() {
        return 'ok';
      }
    }

    const app = await appOf([Quiet, Health], [RateLimitModule.forRoot(byClient(everywhere))]);
    await serving(app, async (get) => {
      assert.deepEqual(await get('/quiet'), { status: 200, policy: '"own";q=10;w=60' });
      assert.deepEqual(await get('/health'), { status: 200, policy: null });
      assert.equal((await everywhere.peek('client-1')).remaining, 10, 'skipped twice, never charged');
      assert.deepEqual(await get('/quiet/loud'), { status: 200, policy: '"everywhere";q=10;w=60' });
      assert.equal((await everywhere.peek('client-1')).remaining, 9);
    });
  });

  it('forRootAsync builds the module limit from another provider', async () => {
    const everywhere = limiter('from-factory', 1);
    const LIMITS = Symbol('limits');

    @Injectable()
    class Limits {
      readonly api = everywhere;
    }

    @Module({ providers: [{ provide: LIMITS, useClass: Limits }], exports: [LIMITS] })
    class LimitsModule {}

    @Controller()
    class Root {
      @Get()
      root() {
        return 'ok';
      }
    }

    const module = RateLimitModule.forRootAsync({
      imports: [LimitsModule],
      inject: [LIMITS],
      useFactory: async (limits: Limits) => byClient(limits.api),
    });
    const app = await appOf([Root], [module]);
    await serving(app, async (get) => {
      assert.deepEqual(await get('/'), { status: 200, policy: '"from-factory";q=1;w=60' });
      assert.equal((await get('/')).status, 429);
    });
  });

  it('a guard built by hand limits every route as a global guard', async () => {
    const everywhere = limiter('by-hand', 1);

    @Controller()
    class Root {
      @Get()
      root() {
        return 'ok';
      }
    }

    @Module({ controllers: [Root] })
    class App {}

    const app = await NestFactory.create(App, { logger: false });
    app.useGlobalGuards(new RateLimitGuard(byClient(everywhere)));
    await serving(app, async (get) => {
      assert.equal((await get('/')).status, 200);
      assert.equal((await get('/')).status, 429);
    });
  });

  it('contexts other than HTTP pass untouched, charging nothing', async () => {
    const everywhere = limiter('http-only', 1);
    const guard = new RateLimitGuard(byClient(everywhere));
    const rpc = { getType: () => 'rpc' } as unknown as ExecutionContext;
    assert.equal(await guard.canActivate(rpc), true);
    assert.equal((await everywhere.peek('client-1')).remaining, 1);
  });

  it('bad options of @RateLimit are refused when the class is defined, naming the option', () => {
    assert.throws(
      () =>
        RateLimit({
          limits: limiter('bad', 1),
          key: 'not a function',
        } as unknown as RateLimitOptions<unknown>),
      (error: { code?: string; message?: string }) =>
        error.code === 'SLUICE_CONFIG' &&
        /key/.test(error.message ?? '') &&
        !/not a function/.test(error.message ?? ''),
    );
  });
});
