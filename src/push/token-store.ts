import type { RedisClient } from '../core/redis/clients.js';
import type { TokenCounts, TokenRegistration } from '../core/types.js';
import { TOKEN_SIDES, type Keys, type TokenSide } from '../core/redis/keys.js';
import { defineScript } from '../core/redis/scripts.js';
import type { WriteAck } from '../core/redis/write-ack.js';

/** docs/api.md#push-tokens--post-v1token: at most this many tokens per identity and side; the oldest registrations are dropped. */
const MAX_TOKENS_PER_SIDE = 100;
export const TOKEN_TTL_SECONDS = 180 * 24 * 3600;

/** The oldest registration time (ms, a sorted set's score) of a token still within the TTL. */
export function liveTokensSince(now = Date.now()): number {
  return now - TOKEN_TTL_SECONDS * 1000;
}

// Every change to a token's place is stamped with a move epoch, drawn when the owner entry is claimed: greater
// than the token's previous epoch and, after the entry expired, than any epoch still remembered (it is at least
// the claim's Redis TIME in ms). A pair's set applies a change to a token only if its epoch is newer than the
// last change it applied to that token: the live set's score is the epoch the token was added with, and a
// tombstone set remembers removals for an hour (far longer than any request lives). So the steps of concurrent
// moves may reach the sets in any order and each set still ends as the latest move left it.
const CLAIM_OWNER = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local epoch = math.max(now, tonumber(redis.call('GET', KEYS[2]) or '0') + 1)
local previous = redis.call('GET', KEYS[1]) or ''
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
redis.call('SET', KEYS[2], string.format('%.0f', epoch), 'EX', ARGV[2])
return { previous, epoch }
`;

const TOMBSTONE_MS = 3_600_000;

// Shared by both pair scripts: the epoch of the last change this pair's set applied to a token, or nil.
const LAST_CHANGE = `
local function lastChange(live, gone, token)
  local added, removed = redis.call('ZSCORE', live, token), redis.call('ZSCORE', gone, token)
  if added and removed then return math.max(tonumber(added), tonumber(removed)) end
  return tonumber(added or removed)
end
`;

// The pair's own part of a registration, atomic across pods: both sides' live and tombstone sets (one hash
// tag), expired and capped. KEYS: live and tombstone set per side; ARGV: token and epoch per side (token '' when
// absent), the cap, the TTL. Returns the counts and the tokens the cap dropped, whose owner entries live in
// other slots and are released by the caller.
const REGISTER_IN_PAIR = `${LAST_CHANGE}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local maxPerSide, ttl = tonumber(ARGV[5]), tonumber(ARGV[6])
local dropped = {}
for side = 1, 2 do
  local live, gone = KEYS[side * 2 - 1], KEYS[side * 2]
  local token, epoch = ARGV[side * 2 - 1], tonumber(ARGV[side * 2])
  dropped[side] = {}
  redis.call('ZREMRANGEBYSCORE', live, '-inf', now - ttl * 1000)
  redis.call('ZREMRANGEBYSCORE', gone, '-inf', now - ${TOMBSTONE_MS})
  if token ~= '' then
    local last = lastChange(live, gone, token)
    if not last or epoch > last then
      redis.call('ZADD', live, epoch, token)
      redis.call('ZREM', gone, token)
    end
    local excess = redis.call('ZCARD', live) - maxPerSide
    if excess > 0 then
      dropped[side] = redis.call('ZRANGE', live, 0, excess - 1)
      redis.call('ZREMRANGEBYRANK', live, 0, excess - 1)
    end
    redis.call('EXPIRE', live, ttl)
  end
end
return { redis.call('ZCARD', KEYS[1]), redis.call('ZCARD', KEYS[3]), dropped[1], dropped[2] }
`;

// The old pair's part of a move: the token leaves its set unless a newer change (a move back) reached it first.
const LEAVE_PAIR = `${LAST_CHANGE}
local epoch = tonumber(ARGV[2])
local last = lastChange(KEYS[1], KEYS[2], ARGV[1])
if last and epoch <= last then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], epoch, ARGV[1])
redis.call('PEXPIRE', KEYS[2], ${TOMBSTONE_MS})
return 1
`;

// Deletes an owner entry only while it still names this pair: another pair may have claimed the token since. The
// epoch stays until it expires, so a later claim still draws a newer one.
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
 * is not one script. It is three steps, each atomic in its slot: claim the owner entry (drawing the move's
 * epoch), add the token to the new pair's set, remove it from the previous owner's set. The sets apply changes
 * by epoch (see CLAIM_OWNER), so concurrent moves of one token, whatever the interleaving of their steps, leave it
 * in exactly the set its owner entry names. A registration interrupted half-way (the client got a 503 and
 * retries) can leave a token in an old pair's set; `tokensFor` delivers a token only to the pair its owner entry
 * names, so never to two pairs.
 */
export class TokenStore {
  private readonly claimOwner;
  private readonly registerInPair;
  private readonly leavePair;
  private readonly releaseOwner;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly ack: WriteAck,
  ) {
    this.claimOwner = defineScript<[string, number]>(redis, 'relayTokenClaimOwner', 2, CLAIM_OWNER);
    this.registerInPair = defineScript<Registered>(redis, 'relayTokenRegister', 4, REGISTER_IN_PAIR);
    this.leavePair = defineScript<number>(redis, 'relayTokenLeavePair', 2, LEAVE_PAIR);
    this.releaseOwner = defineScript<number>(redis, 'relayTokenReleaseOwner', 1, RELEASE_OWNER);
  }

  async save(registration: TokenRegistration): Promise<TokenCounts> {
    const { wkIdentity } = registration;
    const claims = await Promise.all(
      TOKEN_SIDES.map(async (side) => {
        const token = side === 'key' ? registration.keyToken : registration.walletToken;
        if (token === undefined) return undefined;
        const owner = this.keys.tokenOwner(side, token);
        const epochKey = this.keys.tokenEpoch(side, token);
        const [previous, epoch] = await this.claimOwner([owner, epochKey], [wkIdentity, TOKEN_TTL_SECONDS]);
        return { side, token, owner, epochKey, previous, epoch };
      }),
    );
    const sets = TOKEN_SIDES.flatMap((side) => [
      this.keys.tokens(wkIdentity, side),
      this.keys.tokensGone(wkIdentity, side),
    ]);
    const [keyTokens, walletTokens, ...dropped] = await this.registerInPair(sets, [
      ...claims.flatMap((claim) => [claim?.token ?? '', claim?.epoch ?? 0]),
      MAX_TOKENS_PER_SIDE,
      TOKEN_TTL_SECONDS,
    ]);
    const moves = claims.flatMap((claim) =>
      claim && claim.previous !== '' && claim.previous !== wkIdentity
        ? [
            {
              ...claim,
              from: [
                this.keys.tokens(claim.previous, claim.side),
                this.keys.tokensGone(claim.previous, claim.side),
              ],
            },
          ]
        : [],
    );
    await Promise.all(moves.map(({ from, token, epoch }) => this.leavePair(from, [token, epoch])));
    await Promise.all(
      TOKEN_SIDES.flatMap((side, i) => dropped[i]!.map((token) => this.release(wkIdentity, side, token))),
    );
    const given = claims.flatMap((claim) => (claim ? [claim.owner, claim.epochKey] : []));
    await this.ack.confirm(...given, ...sets, ...moves.flatMap(({ from }) => from));
    return { wkIdentity, keyTokens, walletTokens };
  }

  /** How many tokens each side of the pair holds, as a registration answers. */
  async counts(wkIdentity: string): Promise<TokenCounts> {
    const [keyTokens, walletTokens] = await Promise.all(
      TOKEN_SIDES.map((side) => this.redis.zcard(this.keys.tokens(wkIdentity, side))),
    );
    return { wkIdentity, keyTokens: keyTokens!, walletTokens: walletTokens! };
  }

  /**
   * The pair's tokens of one side registered within the TTL that still belong to it: a token that moved on is
   * never delivered here.
   */
  async tokensFor(wkIdentity: string, side: TokenSide): Promise<string[]> {
    const tokens = await this.redis.zrangebyscore(
      this.keys.tokens(wkIdentity, side),
      liveTokensSince(),
      '+inf',
    );
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
