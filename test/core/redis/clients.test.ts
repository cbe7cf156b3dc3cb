import { expect } from 'chai';
import { redisOptions, type RedisRole } from '../../../src/core/redis/clients.js';

const ROLES: RedisRole[] = [
  'store',
  'actions',
  'limiter',
  'queue',
  'confirm',
  'worker',
  'socketPub',
  'socketSub',
];

describe('redisOptions: reconnect strategy', () => {
  for (const role of ROLES) {
    it(`${role}: waits 100 ms more per attempt, at most 1 s, and never gives up`, () => {
      const retry = redisOptions(role).retryStrategy!;
      expect([1, 2, 5, 9, 10, 11, 1000].map((attempt) => retry(attempt))).to.deep.equal([
        100, 200, 500, 900, 1000, 1000, 1000,
      ]);
    });
  }
});
