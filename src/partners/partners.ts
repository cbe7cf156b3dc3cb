import { createHmac } from 'node:crypto';
import type { PartnersConfig } from './variables.js';

/** An on-ramp partner whose widget URLs the relay signs. */
export interface Partner {
  name: string;
  /** The only body fields it signs. */
  signable: readonly string[];
  /** Undefined when not configured: the partner is known but cannot sign (503). */
  secret: string | undefined;
}

export const MAX_SIGNED_CHARS = 5000;

export function partnerRegistry(config: PartnersConfig): ReadonlyMap<string, Partner> {
  const partners: Partner[] = [
    {
      name: 'onramper',
      signable: ['wallets', 'networkWallets', 'walletAddressTags'],
      secret: config.sign.onramperSecret,
    },
  ];
  return new Map(partners.map((partner) => [partner.name, partner]));
}

/** `key=value&…` in the order given, and its HMAC-SHA256 (hex) under the partner's secret. */
export function signParameters(
  secret: string,
  parameters: Record<string, string>,
): { signature: string; signedData: string } {
  const signedData = Object.entries(parameters)
    .map(([key, value]) => `${key}=${value}`)
    .join('&');
  return { signature: createHmac('sha256', secret).update(signedData).digest('hex'), signedData };
}
