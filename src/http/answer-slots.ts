import { answersWaiting as waiting } from '../metrics.js';

interface Address {
  held: number;
  queue: (() => void)[];
}

/**
 * HTTP_ANSWERS_PER_IP, per pod: how many requests of one client address the pod works on at once, counting each
 * from the start of its handler until its answer has been handed to the kernel. A client that never reads its
 * answers holds its slots (the kernel takes only so much of each connection's answers), so the memory its
 * answers pin and the share of Redis and CPU it gets are bounded whatever number of connections it opens; its
 * further requests wait, first come first served, and cost nothing meanwhile.
 */
export class AnswerSlots {
  private readonly addresses = new Map<string, Address>();

  constructor(private readonly perAddress: number) {}

  /** Resolves with the slot's release (call it once) when `ip` has a free slot. */
  async acquire(ip: string): Promise<() => void> {
    let address = this.addresses.get(ip);
    if (!address) {
      address = { held: 0, queue: [] };
      this.addresses.set(ip, address);
    }
    if (address.held < this.perAddress) address.held++;
    else {
      waiting.inc();
      // The slot passes straight from its releaser to the first in the queue, so `held` stays at the cap.
      await new Promise<void>((resolve) => address.queue.push(resolve));
      waiting.dec();
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = address.queue.shift();
      if (next) next();
      else if (--address.held === 0) this.addresses.delete(ip);
    };
  }
}
