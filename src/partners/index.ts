import type { Feature } from '../core/feature.js';
import { sign } from './routes.js';

export { partnerRegistry } from './partners.js';
export { signBody } from './schema.js';

/** On-ramp partners' signatures. */
export const partners: Feature<Parameters<typeof sign.handling>[0]> = { name: 'partners', routes: [sign] };
