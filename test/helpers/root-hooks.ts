import { redis, startTestRedis, stopTestRedis } from './redis.js';

export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(20_000);
    await startTestRedis();
  },
  async beforeEach() {
    if (redis().status === 'ready') await redis().flushall();
  },
  async afterAll() {
    await stopTestRedis();
  },
};
