import type { SignedRoute } from '../../core/signed-routes.js';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { PushConfig } from '../variables.js';
import type { MountedRoute, StoredAnswer, WriteGuards } from '../../core/feature.js';
import { DEFAULT_BODY_LIMIT } from '../../core/http/body.js';
import { ok } from '../../core/http/context.js';
import type { RouteSpec } from '../../core/http/route-spec.js';
import type { LimiterFactory } from '../../core/limits/limiters.js';
import { consumeWithin, rateLimited } from '../../core/limits/rate-limit.js';
import type { AppError } from '../../core/errors.js';
import { validator } from '../../core/validation/validate.js';
import { tokenBody } from './schema.js';
import { SIDES } from '../../core/sides.js';
import type { TokenRegistration, TokenStore } from './store.js';

const parseBody = validator<TokenRegistration>('body', tokenBody);

export const tokenWrite = {
  method: 'post',
  path: '/v1/token',
  summary: 'Registers push-notification tokens of a pair',
  doc: 'push-tokens--post-v1token',
  body: { component: 'TokenRequest', schema: tokenBody, limitBytes: DEFAULT_BODY_LIMIT },
  data: 'TokenCounts',
  errors: ['UNAVAILABLE'],
  signedAs: 'token',
  bearer: 'write',
} satisfies RouteSpec<SignedRoute>;

/** What the token registrations use of the app. */
export interface TokenDeps {
  config: { push: Pick<PushConfig, 'registrations'> };
  stores: { tokens: TokenStore };
  guards: WriteGuards;
  limiter: LimiterFactory;
}

/**
 * Registers push tokens; the answer holds counts only: tokens are never echoed or readable via the API. Bodies
 * count against the client's write budget, and the registration limits bound each pair side's registrations, so
 * nobody fills Redis with tokens kept 180 days or pushes a pair's devices out of its token list in one burst.
 */
export const tokenRegistration: MountedRoute<TokenDeps> = {
  spec: tokenWrite,
  handling: (deps) => {
    const { tokens } = deps.stores;
    const registrations = tokenRegistrationLimits(deps);
    return {
      charge: deps.guards.writeBudget,
      guards: [deps.guards.signed(tokenWrite.signedAs, storedCounts(tokens))],
      handler: async (ctx) => {
        const body = parseBody(ctx.request.body);
        await chargeRegistrations(registrations, ctx, body);
        ctx.state.writing = true;
        ok(ctx, await tokens.save(body));
      },
    };
  },
};

/**
 * The limits of token registrations: per pair and side an hour (a stranger cannot push a pair's devices out of its
 * token list), and per client address a day (nobody fills Redis with tokens kept 180 days).
 */
/** A token registration limit: per client address a day, or per pair and side an hour. */
export type RegistrationLimit = 'address' | 'pair_side';

export interface TokenRegistrationLimits {
  perPairSide: RateLimiterAbstract;
  perAddress: RateLimiterAbstract;
}

/** The app's token registration limits, shared by POST /v1/token and a sync's keyToken. */
export function tokenRegistrationLimits({
  config,
  limiter,
}: Pick<TokenDeps, 'config' | 'limiter'>): TokenRegistrationLimits {
  return {
    perPairSide: limiter('tokens', config.push.registrations.perHour, 3600),
    perAddress: limiter('tokenaddress', config.push.registrations.perAddressPerDay, 86_400),
  };
}

/**
 * Charges a body's registrations, its address first, then each side of the pair; stops at the first limit that
 * refuses them. Returns that limit and how to refuse the request (a counted 429), or nothing when every limit
 * takes them.
 */
export async function registrationRefusal(
  limits: TokenRegistrationLimits,
  ctx: { ip: string },
  body: TokenRegistration,
): Promise<{ limit: RegistrationLimit; refuse: () => AppError } | undefined> {
  const sides = SIDES.filter((side) => body[`${side}Token`] !== undefined);
  const byAddress = await consumeWithin(limits.perAddress, ctx, sides.length);
  if (byAddress) {
    const what = 'token registrations from this address';
    return { limit: 'address', refuse: () => rateLimited(limits.perAddress, what, byAddress) };
  }
  for (const side of sides) {
    const bySide = await consumeWithin(limits.perPairSide, `${side}:${body.wkIdentity}`);
    if (bySide) {
      const what = `${side} token registrations for this pair`;
      return { limit: 'pair_side', refuse: () => rateLimited(limits.perPairSide, what, bySide) };
    }
  }
  return undefined;
}

/** 429 once the address or a side of the pair is over its registrations; charged before anything is written. */
async function chargeRegistrations(
  limits: TokenRegistrationLimits,
  ctx: { ip: string },
  body: TokenRegistration,
): Promise<void> {
  const refusal = await registrationRefusal(limits, ctx, body);
  if (refusal) throw refusal.refuse();
}

/** A resent registration is answered with the pair's counts as they are: registering again changes nothing. */
function storedCounts(store: TokenStore): StoredAnswer {
  return async (body) => JSON.stringify(await store.counts(String(body.wkIdentity)));
}
