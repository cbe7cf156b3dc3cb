import type { RedisClient } from '../redis/clients.js';
import type { TokenCounts, TokenRegistration } from '../types.js';
import { TOKEN_SIDES, type Keys, type TokenSide } from './keys.js';
import { defineScript } from './scripts.js';
import type { WriteAck } from './write-ack.js';

/** docs/api.md#push-tokens--post-v1token: at most this many tokens per identity and side; the oldest registrations are dropped. */
export const MAX_TOKENS_PER_SIDE = 100;
export const TOKEN_TTL_SECONDS = 180 * 24 * 3600;

// The pair's own part of a registration, atomic across pods: both sides' sorted sets (one hash tag) scored by
// registration time (Redis TIME, so all pods share one clock), expired and capped. Returns the counts and the
// tokens the cap dropped, whose owner entries live in other slots and are released by the caller.
const REGISTER_IN_PAIR = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local maxPerSide, ttl = tonumber(ARGV[3]), tonumber(ARGV[4])
local dropped = {}
for i, set in ipairs(KEYS) do
  local token = ARGV[i]
  dropped[i] = {}
  redis.call('ZREMRANGEBYSCORE', set, '-inf', now - ttl * 1000)
  if token ~= '' then
    redis.call('ZADD', set, now, token)
    local excess = redis.call('ZCARD', set) - maxPerSide
    if excess > 0 then
      dropped[i] = redis.call('ZRANGE', set, 0, excess - 1)
      redis.call('ZREMRANGEBYRANK', set, 0, excess - 1)
    end
    redis.call('EXPIRE', set, ttl)
  end
end
return { redis.call('ZCARD', KEYS[1]), redis.call('ZCARD', KEYS[2]), dropped[1], dropped[2] }
`;

// Deletes an owner entry only while it still names this pair: another pair may have claimed the token since.
const RELEASE_OWNER = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

type Registered = [number, number, string[], string[]];

/**
 * Push tokens per pair and side, and a token → owner index so that a token re-registered under another pair
 * moves rather than being delivered to two pairs.
 *
 * The owner entry and the pairs' sets live in different hash slots (on a cluster, on different nodes), so a move
 * is not one script. It is a sequence of idempotent steps, and the owner entry decides: it is claimed first,
 * and `tokensFor` delivers a token only to the pair its owner entry names. A registration interrupted half-way
 * (the client got a 503 and retries) can leave a token in an old pair's set, never deliverable to two pairs.
 */
export class TokenStore {
  private readonly registerInPair;
  private readonly releaseOwner;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly ack: WriteAck,
  ) {
    this.registerInPair = defineScript<Registered>(redis, 'relayTokenRegister', 2, REGISTER_IN_PAIR);
    this.releaseOwner = defineScript<number>(redis, 'relayTokenReleaseOwner', 1, RELEASE_OWNER);
  }

  async save(registration: TokenRegistration): Promise<TokenCounts> {
    const { wkIdentity } = registration;
    const given = TOKEN_SIDES.flatMap((side) => {
      const token = side === 'key' ? registration.keyToken : registration.walletToken;
      return token === undefined ? [] : [{ side, token, owner: this.keys.tokenOwner(side, token) }];
    });
    const previous = await Promise.all(
      given.map(({ owner }) => this.redis.set(owner, wkIdentity, 'EX', TOKEN_TTL_SECONDS, 'GET')),
    );
    const sets = TOKEN_SIDES.map((side) => this.keys.tokens(wkIdentity, side));
    const [keyTokens, walletTokens, ...dropped] = await this.registerInPair(sets, [
      registration.keyToken ?? '',
      registration.walletToken ?? '',
      MAX_TOKENS_PER_SIDE,
      TOKEN_TTL_SECONDS,
    ]);
    const movedFrom = given.flatMap(({ side, token }, i) => {
      const from = previous[i];
      return from && from !== wkIdentity ? [{ set: this.keys.tokens(from, side), token }] : [];
    });
    await Promise.all(movedFrom.map(({ set, token }) => this.redis.zrem(set, token)));
    await Promise.all(
      TOKEN_SIDES.flatMap((side, i) => dropped[i]!.map((token) => this.release(wkIdentity, side, token))),
    );
    await this.ack.confirm(...given.map(({ owner }) => owner), ...sets, ...movedFrom.map(({ set }) => set));
    return { wkIdentity, keyTokens, walletTokens };
  }

  /**
   * The pair's tokens of one side registered within the TTL that still belong to it: a token that moved on is
   * never delivered here.
   */
  async tokensFor(wkIdentity: string, side: TokenSide): Promise<string[]> {
    const since = Date.now() - TOKEN_TTL_SECONDS * 1000;
    const tokens = await this.redis.zrangebyscore(this.keys.tokens(wkIdentity, side), since, '+inf');
    const owners = await Promise.all(
      tokens.map((token) => this.redis.get(this.keys.tokenOwner(side, token))),
    );
    return tokens.filter((_, i) => owners[i] === wkIdentity);
  }

  /**
   * Removes tokens (the push provider refused them for good) from the pair, and their owner entries while they
   * still name it (a token re-registered elsewhere meanwhile belongs to that pair now). Returns how many left
   * the pair's set.
   */
  async remove(wkIdentity: string, side: TokenSide, tokens: string[]): Promise<number> {
    if (tokens.length === 0) return 0;
    const removed = await this.redis.zrem(this.keys.tokens(wkIdentity, side), ...tokens);
    await Promise.all(tokens.map((token) => this.release(wkIdentity, side, token)));
    return removed;
  }

  private release(wkIdentity: string, side: TokenSide, token: string): Promise<number> {
    return this.releaseOwner([this.keys.tokenOwner(side, token)], [wkIdentity]);
  }
}
