import type Router from '@koa/router';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { jsonBody } from '../http/body.js';
import { ok, type RelayState } from '../http/context.js';
import { AppError, unavailable } from '../http/errors.js';
import { consumeOrReject } from '../http/rate-limit.js';
import { validator } from '../http/validate.js';
import { MAX_SIGNED_CHARS, signParameters, type Partner } from '../partners.js';
import { signBody } from '../schemas/sign.js';

const SIGN_BODY_LIMIT = 16 * 1024;

/** POST /v1/sign/{partner}: HMAC of the partner's parameters. Its secret never reaches a log or an answer. */
export function signRoutes(
  router: Router<RelayState>,
  partners: ReadonlyMap<string, Partner>,
  limiter: RateLimiterAbstract,
): void {
  const parsers = new Map(
    [...partners.values()].map((p) => [
      p.name,
      validator<Record<string, string>>('body', signBody(p.signable)),
    ]),
  );

  router.post(
    '/v1/sign/:partner',
    async (ctx, next) => {
      await consumeOrReject(limiter, ctx.ip, 'signing requests');
      const partner = partners.get(ctx.params.partner ?? '');
      if (!partner) throw new AppError('NOT_FOUND', 'There is no such partner.');
      if (partner.secret === undefined)
        throw unavailable(`Signing for ${partner.name} is not configured.`, 60);
      await next();
    },
    jsonBody(SIGN_BODY_LIMIT),
    async (ctx) => {
      const partner = partners.get(ctx.params.partner!)!;
      const unknown = Object.keys(ctx.request.body as object).filter(
        (key) => !partner.signable.includes(key),
      );
      if (unknown.length > 0) {
        throw new AppError('INVALID_PARAMETER', `Only ${partner.signable.join(', ')} can be signed.`, {
          details: unknown.map((key) => ({ field: `/body/${key}`, message: 'is not a signable parameter' })),
        });
      }
      const parameters = parsers.get(partner.name)!(ctx.request.body);
      const signed = signParameters(partner.secret!, parameters);
      if (signed.signedData.length > MAX_SIGNED_CHARS) {
        throw new AppError(
          'INVALID_PARAMETER',
          `The parameters are longer than ${MAX_SIGNED_CHARS} characters.`,
        );
      }
      ok(ctx, signed);
    },
  );
}
