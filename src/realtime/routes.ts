import type { MountedRoute } from '../core/feature.js';
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
} satisfies RouteSpec;

/** What the presence route uses of the app. */
export interface PresenceDeps {
  presence: PresenceReads;
}

/** docs/api.md#presence: never 404, a pair nobody joined is two sides not connected. */
export const realtimeRoutes: MountedRoute<PresenceDeps>[] = [
  {
    spec: presenceRead,
    handling: ({ presence }) => ({
      handler: async (ctx) => {
        const { id } = parseParams({ ...ctx.params });
        ok(ctx, await presence.pair(id));
      },
    }),
  },
];
