import Koa from 'koa';
import { RateLimiterMemory, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { bareRoutes } from './contract/index.js';
import { successAnswers, type RelayState } from './core/http/context.js';
import { corsPolicy } from './core/http/cors.js';
import { outerMiddleware } from './core/http/outer-middleware.js';
import { mount } from './core/http/route-spec.js';
import { createRouter, consumesLimitInScript, isV1, unmatched } from './core/http/routing.js';
import { sharedLimiter, type LimiterFactory } from './core/limits/limiters.js';
import type { Feature } from './core/feature.js';
import { rateLimit, writeBudget } from './core/limits/rate-limit-middleware.js';
import { GlobalLimit } from './core/limits/rate-limit.js';
import type { ApiDeps, ApiParts } from './deps.js';
import { API_ROUTES, FEATURES } from './features.js';
import { sessionRead, signedBody } from './identity/index.js';

/** The Koa app: middleware in request order, then every feature's routes. */
export function buildApp(parts: ApiParts): Koa<RelayState> {
  const { config, log } = parts;
  const app = new Koa<RelayState>({
    proxy: config.rateLimit.trustProxyHops > 0,
    maxIpsCount: config.rateLimit.trustProxyHops,
  });
  app.silent = true;

  const limiters = new Map<string, RateLimiterAbstract>();
  const limiter: LimiterFactory = (name, points, seconds) => {
    if (!limiters.has(name))
      limiters.set(name, sharedLimiter(parts.redis.limiter, config.keyPrefix, name, points, seconds));
    return limiters.get(name)!;
  };
  const { bytes, windowSeconds: bytesWindow } = config.writeBudget;
  const deps: ApiDeps = {
    ...parts,
    limiter,
    guards: {
      writeBudget: writeBudget(limiter('bytes', bytes, bytesWindow)),
      signed: (route, stored) => signedBody(parts.authGate, route, stored),
      sessionRead: (subject) => sessionRead(parts.sessions.check, subject),
    },
    specs: API_ROUTES,
  };
  const router = createRouter();
  const features: readonly Feature<ApiDeps>[] = FEATURES;
  for (const feature of features) {
    for (const route of feature.routes ?? []) mount(router, route.spec, route.handling(deps));
  }

  const { points, windowSeconds } = config.rateLimit;
  const inMemory = new RateLimiterMemory({ points, duration: windowSeconds });
  const globalLimit = new GlobalLimit(
    sharedLimiter(parts.redis.limiter, config.keyPrefix, 'api', points, windowSeconds, inMemory),
    inMemory,
    points,
    windowSeconds,
  );

  app.use(outerMiddleware(log, config.connections, parts.readiness));
  app.use(corsPolicy(config.corsOrigins));
  app.use(rateLimit(globalLimit, isV1, consumesLimitInScript(API_ROUTES)));
  app.use(unmatched(router));
  app.use(successAnswers(bareRoutes(API_ROUTES, config.apiProfile)));
  app.use(router.routes());
  return app;
}
