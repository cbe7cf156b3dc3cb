import { parametersBody } from '../core/http/body.js';
import type { CoreConfig } from '../core/config/config.js';
import type { PartnersConfig } from './variables.js';
import { ok } from '../core/http/context.js';
import type { MountedRoute } from '../core/feature.js';
import type { RouteSpec } from '../core/http/route-spec.js';
import type { LimiterFactory } from '../core/limits/limiters.js';
import { AppError } from '../core/errors.js';
import { consumeOrReject } from '../core/limits/rate-limit.js';
import { validator } from '../core/validation/validate.js';
import { MAX_SIGNED_CHARS, partnerRegistry, signParameters } from './partners.js';
import { signBody } from './schema.js';

const parseParameters = validator<Record<string, string>>('body', signBody);

/** Partner parameters are at most 5000 characters once signed; 16 KiB leaves room for JSON escapes. */
const SIGN_BODY_LIMIT = 16 * 1024;

export const signRoute = {
  method: 'post',
  path: '/v1/sign/{partner}',
  summary: "HMAC-SHA256 of an on-ramp partner's parameters",
  doc: 'post-v1signpartner',
  params: { properties: { partner: { type: 'string', description: 'a configured partner: onramper' } } },
  body: {
    component: 'SignRequest',
    schema: signBody,
    limitBytes: SIGN_BODY_LIMIT,
    exact: true,
    readByHandler: true,
  },
  data: 'Signature',
  bareForApps: true,
  queryStringForApps: true,
  errors: ['NOT_FOUND', 'UNAVAILABLE'],
} satisfies RouteSpec;

export interface SignDeps {
  config: Pick<CoreConfig, 'apiProfile'> & PartnersConfig;
  limiter: LimiterFactory;
}

/**
 * POST /v1/sign/{partner}: HMAC of the partner's parameters. Its secret never reaches a log or an answer. Under
 * API_PROFILE=ssp-apps the parameters may also come as a form or text `key=value&…` body.
 */
export const sign: MountedRoute<SignDeps> = {
  spec: signRoute,
  handling: ({ config, limiter }) => {
    const partners = partnerRegistry(config);
    const perMinute = limiter('sign', config.sign.perMinute, 60);
    const readBody = parametersBody(signRoute.body.limitBytes, config.apiProfile === 'ssp-apps');
    return {
      handler: async (ctx) => {
        await consumeOrReject(perMinute, ctx, 'signing requests from this address');
        const partner = partners.get(ctx.params.partner ?? '');
        if (!partner) throw new AppError('NOT_FOUND', 'There is no such partner.');
        // No Retry-After: only an operator can fix a missing secret.
        if (partner.secret === undefined) {
          throw new AppError('UNAVAILABLE', `Signing for ${partner.name} is not configured.`);
        }
        // The body is read only once the partner can sign, so 404 and 503 never depend on it.
        await readBody(ctx, async () => {});
        const unknown = Object.keys(ctx.request.body as object).filter(
          (key) => !partner.signable.includes(key),
        );
        if (unknown.length > 0) {
          throw new AppError('INVALID_PARAMETER', `Only ${partner.signable.join(', ')} can be signed.`, {
            details: unknown.map((key) => ({
              field: `/body/${key}`,
              message: 'is not a signable parameter',
            })),
          });
        }
        const parameters = parseParameters(ctx.request.body);
        const signed = signParameters(partner.secret, parameters);
        if (signed.signedData.length > MAX_SIGNED_CHARS) {
          throw new AppError(
            'INVALID_PARAMETER',
            `The parameters are longer than ${MAX_SIGNED_CHARS} characters.`,
          );
        }
        ok(ctx, signed);
      },
    };
  },
};
