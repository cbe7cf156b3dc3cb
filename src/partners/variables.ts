import { int, string } from '../core/config/parsers.js';
import { API, optional, variable, type ValuesOf } from '../core/config/variables.js';

/** The partners' variables: the signing budget and each partner's secret. */
export const PARTNERS_VARIABLES = {
  SIGN_PER_MINUTE: variable(int(1, 1_000_000), 30, {
    roles: API,
    doc: 'per-IP budget of partner signing, per minute',
  }),
  ONRAMPER_SECRET: optional(string, {
    roles: API,
    doc: 'HMAC key of the `onramper` partner (unset: `/v1/sign/onramper` answers 503)',
  }),
};

export function partnersSettings(v: ValuesOf<typeof PARTNERS_VARIABLES>) {
  return { sign: { perMinute: v.SIGN_PER_MINUTE, onramperSecret: v.ONRAMPER_SECRET } };
}

export type PartnersConfig = ReturnType<typeof partnersSettings>;
