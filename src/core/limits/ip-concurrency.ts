import { answersWaiting as waiting } from '../metrics.js';

interface Address {
  held: number;
  queue: (() => void)[];
}

/**
 * HTTP_ANSWERS_PER_IP, per pod and pool (reads, writes): how many requests of one client address the pod works
 * on at once, counting each from the start of its handler until its answer has been handed to the kernel. A
 * client that never reads its answers holds its slots (the kernel takes only so much of each connection's
 * answers), so the memory its answers pin and the share of Redis and CPU it gets are bounded whatever number of
 * connections it opens; its further requests wait, first come first served, and cost nothing meanwhile.
 */
export class IpConcurrencyLimit {
  private readonly addresses = new Map<string, Address>();

  constructor(private readonly perAddress: number) {}

  /**
   * The slot's release (call it once) when `ip` has a free slot, at once (the common case costs no extra tick);
   * else a promise of it, settled when the slot passes to this request.
   */
  acquire(ip: string): (() => void) | Promise<() => void> {
    let address = this.addresses.get(ip);
    if (!address) {
      address = { held: 0, queue: [] };
      this.addresses.set(ip, address);
    }
    if (address.held < this.perAddress) {
      address.held++;
      return this.releaser(ip, address);
    }
    waiting.inc();
    // The slot passes straight from its releaser to the first in the queue, so `held` stays at the cap.
    return new Promise((resolve) =>
      address.queue.push(() => {
        waiting.dec();
        resolve(this.releaser(ip, address));
      }),
    );
  }

  private releaser(ip: string, address: Address): () => void {
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
