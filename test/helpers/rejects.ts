import { expect } from 'chai';
import { post, type TestApi } from './api.js';
import { redis } from './redis.js';

export type InvalidCase = [label: string, body: unknown, field: string];

/**
 * One test per case: POSTing `body` answers 400 INVALID_PARAMETER with a detail for `field`, and no Redis key
 * matching `untouched` exists afterwards (nothing was written).
 */
export function itRejectsBodies(
  api: () => TestApi,
  path: string,
  cases: InvalidCase[],
  untouched: string,
): void {
  for (const [label, body, field] of cases) {
    it(label, async () => {
      const res = await post(api().url, path, body);
      expect(res.status).to.equal(400);
      expect(res.body.error.code).to.equal('INVALID_PARAMETER');
      expect(res.body.error.details.map((d: { field: string }) => d.field)).to.include(field);
      expect(await redis().keys(untouched)).to.deep.equal([]);
    });
  }
}
