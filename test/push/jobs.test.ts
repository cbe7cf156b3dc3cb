import { expect } from 'chai';
import { intentFields } from '../../src/mailbox/push-intent.js';
import { jobOfIntent, pushJobId, pushJobOptions } from '../../src/push/jobs.js';

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

describe('jobOfIntent', () => {
  const record = { id: 'rec_1-A', wkIdentity: 'wk1', action: 'tx', expiresAt: '2030-01-01T00:00:00.000Z' };

  it('reads back the job an intent was written for, with nothing done yet', () => {
    expect(jobOfIntent(intentFields(record))).to.deep.equal({ ...record, done: [] });
    expect(pushJobId(record)).to.equal('push-rec_1-A');
  });

  it('is undefined for a deleted entry, a missing field, an id BullMQ refuses or an unreadable expiry', () => {
    expect(jobOfIntent(null)).to.equal(undefined);
    expect(jobOfIntent(['id', 'rec1', 'wkIdentity', 'wk1', 'action', 'tx'])).to.equal(undefined);
    expect(jobOfIntent(intentFields({ ...record, id: 'bad:id' }))).to.equal(undefined);
    expect(jobOfIntent(intentFields({ ...record, id: 'x'.repeat(65) }))).to.equal(undefined);
    expect(jobOfIntent(intentFields({ ...record, expiresAt: 'never' }))).to.equal(undefined);
  });
});
