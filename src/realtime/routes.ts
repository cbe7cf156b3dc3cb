import type { MountedRoute, WriteGuards } from '../core/feature.js';
import { ok } from '../core/http/context.js';
import type { RouteSpec } from '../core/http/route-spec.js';
import { idParams } from '../core/validation/common-schema.js';
import { validator } from '../core/validation/validate.js';
import type { PresenceReads } from './presence.js';

const parseParams = validator<{ id: string }>('params', idParams);

export const presenceRead = {
  method: 'get',
  path: '/v1/presence/{id}',
  summary:
    "Whether each side of a pair has a socket joined to the pair's room, on any pod, and when it was last seen (id is the wkIdentity)",
  doc: 'presence',
  params: idParams,
  data: 'Presence',
  bareForApps: true,
  errors: ['INVALID_PARAMETER', 'UNAVAILABLE'],
  bearer: 'read',
} satisfies RouteSpec;

/** What the presence route uses of the app. */
export interface PresenceDeps {
  presence: PresenceReads;
  guards: Pick<WriteGuards, 'sessionRead'>;
}

/**
 * docs/api.md#presence: never 404, a pair nobody joined is two sides not connected. A protected read: a session
 * token of the pair when given, required under AUTH_READS=required.
 */
export const realtimeRoutes: MountedRoute<PresenceDeps>[] = [
  {
    spec: presenceRead,
    handling: ({ presence, guards }) => ({
      guards: [guards.sessionRead('pair')],
      handler: async (ctx) => {
        const { id } = parseParams({ ...ctx.params });
        ok(ctx, await presence.pair(id));
      },
    }),
  },
];
