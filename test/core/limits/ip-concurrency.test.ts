import { expect } from 'chai';
import { IpConcurrencyLimit } from '../../../src/core/limits/ip-concurrency.js';
import { answersWaiting } from '../../../src/core/metrics.js';

const waiting = async () => (await answersWaiting.get()).values[0]?.value ?? 0;

describe('IpConcurrencyLimit', () => {
  it('hands out up to `perAddress` slots per address at once, synchronously', () => {
    const slots = new IpConcurrencyLimit(2);
    expect(slots.acquire('192.0.2.1')).to.be.a('function');
    expect(slots.acquire('192.0.2.1')).to.be.a('function');
    expect(slots.acquire('192.0.2.1')).to.be.a('promise');
    expect(slots.acquire('192.0.2.2')).to.be.a('function');
  });

  it('passes a released slot to the waiting requests first come, first served', async () => {
    const slots = new IpConcurrencyLimit(1);
    const release = slots.acquire('192.0.2.1') as () => void;
    const order: string[] = [];
    const second = (slots.acquire('192.0.2.1') as Promise<() => void>).then((next) => {
      order.push('second');
      return next;
    });
    const third = (slots.acquire('192.0.2.1') as Promise<() => void>).then((next) => {
      order.push('third');
      return next;
    });
    await Promise.resolve();
    expect(order).to.deep.equal([]);
    release();
    const releaseSecond = await second;
    expect(order).to.deep.equal(['second']);
    // The slot passed on: a new request still waits.
    expect(slots.acquire('192.0.2.1')).to.be.a('promise');
    releaseSecond();
    await third;
    expect(order).to.deep.equal(['second', 'third']);
  });

  it('counts the waiting requests in the answersWaiting gauge until they get their slot', async () => {
    const slots = new IpConcurrencyLimit(1);
    const before = await waiting();
    const release = slots.acquire('192.0.2.1') as () => void;
    const queued = slots.acquire('192.0.2.1') as Promise<() => void>;
    expect(await waiting()).to.equal(before + 1);
    release();
    (await queued)();
    expect(await waiting()).to.equal(before);
  });

  it('ignores a second call of the same release', () => {
    const slots = new IpConcurrencyLimit(1);
    const release = slots.acquire('192.0.2.1') as () => void;
    release();
    const again = slots.acquire('192.0.2.1');
    expect(again).to.be.a('function');
    release();
    expect(slots.acquire('192.0.2.1')).to.be.a('promise');
  });

  it('frees every slot of an address once all are released', () => {
    const slots = new IpConcurrencyLimit(2);
    const first = slots.acquire('192.0.2.1') as () => void;
    const second = slots.acquire('192.0.2.1') as () => void;
    first();
    second();
    expect(slots.acquire('192.0.2.1')).to.be.a('function');
    expect(slots.acquire('192.0.2.1')).to.be.a('function');
  });
});
