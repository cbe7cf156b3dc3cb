import type { Feature } from '../core/feature.js';
import { sign, type SignDeps } from './routes.js';

/** On-ramp partners' signatures. */
export const partners: Feature<SignDeps> = { routes: [sign] };
