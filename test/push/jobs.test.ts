import { expect } from 'chai';
import { decodeIntent, encodeIntent } from '../../src/push/intent.js';
import { pushJobId, pushJobOptions } from '../../src/push/jobs.js';

describe('pushJobOptions', () => {
  it("retries with the push worker's backoff from the configured base, kept as long as an action lives", () => {
    expect(pushJobOptions({ maxAttempts: 5, retryBaseMs: 2000 }, 3600)).to.deep.equal({
      attempts: 5,
      backoff: { type: 'push', delay: 2000 },
      removeOnComplete: { age: 3600 },
      removeOnFail: { age: 7 * 86_400 },
    });
  });
});

describe('decodeIntent', () => {
  const record = {
    id: 'rec_1-A',
    wkIdentity: 'wk1',
    action: 'tx',
    expiresAt: '2030-01-01T00:00:00.000Z',
    createdAt: '2029-12-31T23:45:00.000Z',
  };

  it('reads back the intent as it was written', () => {
    expect(decodeIntent(encodeIntent(record))).to.deep.equal(record);
    expect(pushJobId(record)).to.equal('push-rec_1-A');
  });

  it('reads an intent without createdAt (written by an older relay) without it', () => {
    const { createdAt: _, ...older } = record;
    const fields = encodeIntent(record).slice(0, -2);
    expect(decodeIntent(fields)).to.deep.equal(older);
  });

  it('is undefined for a deleted entry, a missing field, an id BullMQ refuses or an unreadable time', () => {
    expect(decodeIntent(null)).to.equal(undefined);
    expect(decodeIntent(['id', 'rec1', 'wkIdentity', 'wk1', 'action', 'tx'])).to.equal(undefined);
    expect(decodeIntent(encodeIntent({ ...record, id: 'bad:id' }))).to.equal(undefined);
    expect(decodeIntent(encodeIntent({ ...record, id: 'x'.repeat(65) }))).to.equal(undefined);
    expect(decodeIntent(encodeIntent({ ...record, expiresAt: 'never' }))).to.equal(undefined);
    expect(decodeIntent(encodeIntent({ ...record, createdAt: 'never' }))).to.equal(undefined);
  });
});
