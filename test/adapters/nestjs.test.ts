/**
 * The HTTP conformance suite against `sluice/nestjs` (NestJS on @nestjs/platform-express) on a
 * real socket: the module's limit is the one in front of every route, `@RateLimit()` the route's.
 */
import 'reflect-metadata';
import { Controller, Get, Module, Options, Post, Req, Res, type Type } from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Request, Response } from 'express';
import type { AddressInfo } from 'node:net';
import {
  RateLimit,
  RateLimitGuard,
  RateLimitModule,
  rateLimitOf,
  sendError,
  sendRateLimited,
  type RateLimitInput,
} from '../../src/adapters/nestjs/index.js';
import {
  abandonRequest,
  httpConformance,
  nodeHeader,
  socketApp,
  type AppSpec,
} from '../../src/testing/index.js';

/** `@RateLimit(options)` where the spec asks for a limit, nothing elsewhere. */
function limitedBy(options: RateLimitInput<unknown> | undefined): MethodDecorator & ClassDecorator {
  return options === undefined ? () => undefined : RateLimit(options);
}

/** Reads the whole body before answering, as a handler behind a body parser would. */
async function ok(req: Request, res: Response): Promise<void> {
  for await (const _chunk of req) {
    // Read and dropped: the point is that a limit answers before this would finish.
  }
  res.status(200).json({ ok: true });
}

function controllers(spec: AppSpec): Type[] {
  // Nest has no mount point for a guard: a limit on every route under /api is the /api
  // controller's own; mounted twice, it is also on every controller besides the module's.
  const mounted = spec.everyRouteMount !== undefined || spec.everyRouteTwice === true;
  const onEvery = limitedBy(mounted ? spec.everyRoute : undefined);

  @Controller('api')
  @onEvery
  class Api {
    @Post('things')
    @limitedBy(spec.routes?.['POST /api/things'])
    postThings(@Req() req: Request, @Res() res: Response) {
      return ok(req, res);
    }

    @Get('things')
    getThings(@Req() req: Request, @Res() res: Response) {
      return ok(req, res);
    }

    // Nest routes only what it knows, and a guard runs on a route: the suite's preflights need one.
    @Options('things')
    preflight(@Res() res: Response) {
      res.status(204).end();
    }

    @Post('messages')
    @limitedBy(spec.routes?.['POST /api/messages'])
    messages(@Req() req: Request, @Res() res: Response) {
      return ok(req, res);
    }

    @Post('login')
    async login(@Req() req: Request, @Res() res: Response) {
      const { limiter, key, headers } = spec.login!;
      let decision;
      try {
        decision = await limiter.take(key(req));
      } catch (error) {
        return sendError(res, error);
      }
      if (!decision.allowed) return sendRateLimited(res, decision, { headers });
      await ok(req, res);
    }
  }

  @Controller('health')
  @limitedBy(spec.everyRouteTwice === true ? spec.everyRoute : undefined)
  class Health {
    @Get()
    health(@Req() req: Request, @Res() res: Response) {
      return ok(req, res);
    }

    @Get('live')
    live(@Req() req: Request, @Res() res: Response) {
      return ok(req, res);
    }
  }

  const found: Type[] = [Api, Health];
  if (spec.outcome !== undefined) {
    const { limit, seen, closed } = spec.outcome;

    @Controller('api/outcome')
    class Outcome {
      @Post()
      @RateLimit(limit)
      answer(@Req() req: Request, @Res() res: Response) {
        seen?.(rateLimitOf(req));
        const ask = req.get('x-outcome') ?? '200';
        if (ask === 'throw') throw new Error('the handler failed');
        if (ask === 'stall') {
          res.once('close', () => setImmediate(() => closed?.()));
          res.writeHead(200, { 'content-type': 'text/plain' });
          return void res.write('part of a body that never ends');
        }
        res.status(Number(ask)).json({ ok: true });
      }
    }
    found.push(Outcome);
  }
  return found;
}

async function start(spec: AppSpec) {
  const moduleLimit = spec.everyRoute !== undefined && spec.everyRouteMount === undefined;

  @Module({
    imports: moduleLimit ? [RateLimitModule.forRoot(spec.everyRoute!)] : [],
    controllers: controllers(spec),
    providers: [{ provide: APP_GUARD, useClass: RateLimitGuard }],
  })
  class App {}

  const app = await NestFactory.create<NestExpressApplication>(App, { logger: false });
  if (spec.exposedByCors !== undefined) {
    const exposed = spec.exposedByCors;
    app.use((_req: Request, res: Response, next: () => void) => {
      res.set('Access-Control-Expose-Headers', exposed);
      next();
    });
  }
  await app.init();
  const running = await socketApp(app.getHttpServer());
  const port = (app.getHttpServer().address() as AddressInfo).port;
  return {
    ...running,
    abandon: (path: string, headers: Record<string, string>) => abandonRequest(port, path, headers),
    async close() {
      await running.close();
      await app.close();
    },
  };
}

httpConformance({
  name: 'nestjs',
  header: nodeHeader,
  start,
  findsClientAddress: true,
  countOnly: true,
  delays: true,
});
