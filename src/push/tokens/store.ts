import type { RedisClient } from '../../core/redis/clients.js';
import type { Keys } from '../../core/redis/keys.js';
import { SIDES, type Side } from '../../core/sides.js';
import { DELETE_IF_EQUAL, defineScript, readScript } from '../../core/redis/scripts.js';
import type { WriteAck } from '../../core/redis/write-ack.js';

export interface TokenRegistration {
  wkIdentity: string;
  keyToken?: string;
  walletToken?: string;
}

export interface TokenCounts {
  wkIdentity: string;
  keyTokens: number;
  walletTokens: number;
}

/** docs/api.md#push-tokens--post-v1token: at most this many tokens per identity and side; the oldest registrations are dropped. */
const MAX_TOKENS_PER_SIDE = 100;
export const TOKEN_TTL_SECONDS = 180 * 24 * 3600;

/** The oldest registration time (ms, a sorted set's score) of a token still within the TTL. */
export function liveTokensSince(now = Date.now()): number {
  return now - TOKEN_TTL_SECONDS * 1000;
}

const CLAIM_OWNER = readScript(new URL('lua/claim-owner-2.lua', import.meta.url));
const REGISTER_IN_PAIR = readScript(new URL('lua/register-in-pair-4.lua', import.meta.url));
const LEAVE_PAIR = readScript(new URL('lua/leave-pair-2.lua', import.meta.url));

type Registered = [number, number, string[], string[]];

/**
 * Push tokens per pair and side, and a token → owner index so that a token re-registered under another pair
 * moves rather than being delivered to two pairs.
 *
 * The owner entry and the pairs' sets live in different hash slots (on a cluster, on different nodes), so a move
 * is not one script. It is three steps, each atomic in its slot: claim the owner entry (drawing the move's
 * epoch), add the token to the new pair's set, remove it from the previous owner's set. The sets apply changes
 * by epoch (see lua/claim-owner-2.lua), so concurrent moves of one token, whatever the interleaving of their steps, leave it
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
    this.claimOwner = defineScript<[string, number]>(redis, 'relayTokenClaimOwner', CLAIM_OWNER);
    this.registerInPair = defineScript<Registered>(redis, 'relayTokenRegister', REGISTER_IN_PAIR);
    this.leavePair = defineScript<number>(redis, 'relayTokenLeavePair', LEAVE_PAIR);
    this.releaseOwner = defineScript<number>(redis, 'relayTokenReleaseOwner', DELETE_IF_EQUAL);
  }

  async save(registration: TokenRegistration): Promise<TokenCounts> {
    const { wkIdentity } = registration;
    const claims = await Promise.all(
      SIDES.map(async (side) => {
        const token = side === 'key' ? registration.keyToken : registration.walletToken;
        if (token === undefined) return undefined;
        const owner = this.keys.tokenOwner(side, token);
        const epochKey = this.keys.tokenEpoch(side, token);
        const [previous, epoch] = await this.claimOwner([owner, epochKey], [wkIdentity, TOKEN_TTL_SECONDS]);
        return { side, token, owner, epochKey, previous, epoch };
      }),
    );
    const sets = SIDES.flatMap((side) => [
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
      SIDES.flatMap((side, i) => dropped[i]!.map((token) => this.release(wkIdentity, side, token))),
    );
    const given = claims.flatMap((claim) => (claim ? [claim.owner, claim.epochKey] : []));
    await this.ack.confirm(...given, ...sets, ...moves.flatMap(({ from }) => from));
    return { wkIdentity, keyTokens, walletTokens };
  }

  /** How many tokens each side of the pair holds, as a registration answers. */
  async counts(wkIdentity: string): Promise<TokenCounts> {
    const [keyTokens, walletTokens] = await Promise.all(
      SIDES.map((side) => this.redis.zcard(this.keys.tokens(wkIdentity, side))),
    );
    return { wkIdentity, keyTokens: keyTokens!, walletTokens: walletTokens! };
  }

  /**
   * The pair's tokens of one side registered within the TTL that still belong to it: a token that moved on is
   * never delivered here.
   */
  async tokensFor(wkIdentity: string, side: Side): Promise<string[]> {
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
  async remove(wkIdentity: string, side: Side, tokens: string[]): Promise<number> {
    if (tokens.length === 0) return 0;
    const removed = await this.redis.zrem(this.keys.tokens(wkIdentity, side), ...tokens);
    await Promise.all(tokens.map((token) => this.release(wkIdentity, side, token)));
    return removed;
  }

  private release(wkIdentity: string, side: Side, token: string): Promise<number> {
    return this.releaseOwner([this.keys.tokenOwner(side, token)], [wkIdentity]);
  }
}
