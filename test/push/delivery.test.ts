import type { MinimalJob } from 'bullmq';
import { expect } from 'chai';
import { pushBackoff, PushRetryError } from '../../src/push/delivery.js';

const job = (backoff: MinimalJob['opts']['backoff']) => ({ opts: { backoff } }) as unknown as MinimalJob;

/** Runs `fn` with Math.random answering `value`. */
function withRandom<T>(value: number, fn: () => T): T {
  const random = Math.random;
  Math.random = () => value;
  try {
    return fn();
  } finally {
    Math.random = random;
  }
}

describe('pushBackoff', () => {
  it('is half to all of base·2ⁿ⁻¹, n the attempts made, with the base from the job', () => {
    const push = job({ type: 'push', delay: 1000 });
    expect(withRandom(0, () => pushBackoff(1, 'push', new Error('x'), push))).to.equal(500);
    expect(withRandom(0.5, () => pushBackoff(1, 'push', new Error('x'), push))).to.equal(750);
    expect(withRandom(0, () => pushBackoff(2, 'push', new Error('x'), push))).to.equal(1000);
    expect(withRandom(0.5, () => pushBackoff(3, 'push', new Error('x'), push))).to.equal(3000);
    expect(withRandom(0.999, () => pushBackoff(4, 'push', new Error('x'), push))).to.equal(7996);
  });

  it('takes a base given as a number, and none without a job', () => {
    expect(withRandom(0, () => pushBackoff(2, 'push', undefined, job(300)))).to.equal(300);
    expect(withRandom(0, () => pushBackoff(3, 'push'))).to.equal(0);
  });

  it("stretches to the provider's Retry-After when that is longer, not when shorter", () => {
    const push = job({ type: 'push', delay: 1000 });
    expect(withRandom(0, () => pushBackoff(1, 'push', new PushRetryError('x', 60_000), push))).to.equal(
      60_000,
    );
    expect(withRandom(0, () => pushBackoff(1, 'push', new PushRetryError('x', 100), push))).to.equal(500);
    expect(withRandom(0, () => pushBackoff(1, 'push', new PushRetryError('x', undefined), push))).to.equal(
      500,
    );
  });
});
