import type { Feature } from '../core/feature.js';
import { PARTNERS_VARIABLES, partnersSettings } from './variables.js';
import { sign, type SignDeps } from './routes.js';

/** On-ramp partners' signatures. */
export const partners = {
  config: { variables: PARTNERS_VARIABLES, settings: partnersSettings },
  routes: [sign],
} satisfies Feature<SignDeps>;
