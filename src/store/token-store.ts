import type { Redis } from 'ioredis';
import type { TokenCounts, TokenRegistration } from '../types.js';
import type { Keys, TokenSide } from './keys.js';
import { defineScript } from './scripts.js';

/** SPEC §3: at most this many tokens per identity and side; the oldest registrations are dropped. */
export const MAX_TOKENS_PER_SIDE = 100;
export const TOKEN_TTL_SECONDS = 180 * 24 * 3600;

// Per side: a sorted set of tokens scored by registration time (Redis TIME, so all pods share one clock) and a
// token → owner index keyed by the token's SHA-1, so a token re-registered under another identity moves
// rather than being delivered to two pairs. One script: moves, caps and expiry are atomic across pods.
const REGISTER = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ownerPrefix, identity, maxPerSide, ttl, setPrefix = ARGV[1], ARGV[2], tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7]
local sides = { { 'key', KEYS[1], ARGV[3] }, { 'wallet', KEYS[2], ARGV[4] } }
for _, s in ipairs(sides) do
  local side, set, token = s[1], s[2], s[3]
  redis.call('ZREMRANGEBYSCORE', set, '-inf', now - ttl * 1000)
  if token ~= '' then
    local owner = ownerPrefix .. side .. ':' .. redis.sha1hex(token)
    local previous = redis.call('GET', owner)
    if previous and previous ~= identity then
      redis.call('ZREM', setPrefix .. side .. ':' .. previous, token)
    end
    redis.call('ZADD', set, now, token)
    redis.call('SET', owner, identity, 'EX', ttl)
    local excess = redis.call('ZCARD', set) - maxPerSide
    if excess > 0 then
      for _, old in ipairs(redis.call('ZRANGE', set, 0, excess - 1)) do
        local oldOwner = ownerPrefix .. side .. ':' .. redis.sha1hex(old)
        if redis.call('GET', oldOwner) == identity then redis.call('DEL', oldOwner) end
      end
      redis.call('ZREMRANGEBYRANK', set, 0, excess - 1)
    end
    redis.call('EXPIRE', set, ttl)
  end
end
return { redis.call('ZCARD', KEYS[1]), redis.call('ZCARD', KEYS[2]) }
`;

// The pair's live tokens of one side: registered within the TTL and still owned by this pair (the owner index
// is the truth; a set entry may outlive a move by a moment).
const TOKENS_FOR = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ownerPrefix, identity, side, ttl = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local live = {}
for _, token in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], now - ttl * 1000, '+inf')) do
  if redis.call('GET', ownerPrefix .. side .. ':' .. redis.sha1hex(token)) == identity then
    live[#live + 1] = token
  end
end
return live
`;

// Tokens the push provider refused for good leave the pair's set; their owner entry goes only while it still
// names this pair (a token re-registered elsewhere meanwhile belongs to that pair now).
const REMOVE = `
local ownerPrefix, identity, side = ARGV[1], ARGV[2], ARGV[3]
local removed = 0
for i = 4, #ARGV do
  local token = ARGV[i]
  removed = removed + redis.call('ZREM', KEYS[1], token)
  local owner = ownerPrefix .. side .. ':' .. redis.sha1hex(token)
  if redis.call('GET', owner) == identity then redis.call('DEL', owner) end
end
return removed
`;

export class TokenStore {
  private readonly register;
  private readonly liveTokens;
  private readonly removeTokens;

  constructor(
    redis: Redis,
    private readonly keys: Keys,
  ) {
    this.register = defineScript<[number, number]>(redis, 'relayTokenRegister', 2, REGISTER);
    this.liveTokens = defineScript<string[]>(redis, 'relayTokensFor', 1, TOKENS_FOR);
    this.removeTokens = defineScript<number>(redis, 'relayTokenRemove', 1, REMOVE);
  }

  async save(registration: TokenRegistration): Promise<TokenCounts> {
    const { wkIdentity } = registration;
    const [keyTokens, walletTokens] = await this.register(
      [this.keys.tokens(wkIdentity, 'key'), this.keys.tokens(wkIdentity, 'wallet')],
      [
        this.keys.tokenOwnerPrefix,
        wkIdentity,
        registration.keyToken ?? '',
        registration.walletToken ?? '',
        MAX_TOKENS_PER_SIDE,
        TOKEN_TTL_SECONDS,
        this.keys.tokenSetPrefix,
      ],
    );
    return { wkIdentity, keyTokens, walletTokens };
  }

  /** The tokens registered for this pair and side that still belong to it. */
  tokensFor(wkIdentity: string, side: TokenSide): Promise<string[]> {
    return this.liveTokens(
      [this.keys.tokens(wkIdentity, side)],
      [this.keys.tokenOwnerPrefix, wkIdentity, side, TOKEN_TTL_SECONDS],
    );
  }

  /** Removes these tokens from the pair (and from the owner index where it still names the pair); the count removed. */
  async remove(wkIdentity: string, side: TokenSide, tokens: string[]): Promise<number> {
    if (tokens.length === 0) return 0;
    return this.removeTokens(
      [this.keys.tokens(wkIdentity, side)],
      [this.keys.tokenOwnerPrefix, wkIdentity, side, ...tokens],
    );
  }
}
