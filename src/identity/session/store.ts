import type { RedisClient } from '../../core/redis/clients.js';
import type { Keys } from '../../core/redis/keys.js';
import { defineScript, readScript } from '../../core/redis/scripts.js';
import type { WriteAck } from '../../core/redis/write-ack.js';
import type { Side } from '../../core/sides.js';
import type { ChallengeFor } from './challenge.js';

const CONSUME = readScript(new URL('lua/consume-challenge-1.lua', import.meta.url));
const REVOKE = readScript(new URL('lua/revoke-1.lua', import.meta.url));

/** How an exchange found its challenge. */
export type Consumed = 'ok' | 'absent' | 'other' | 'used';

/** A subject side's stamps: the revocation stamp (undefined: none) and the pin stamp (0: not pinned). */
export interface Stamps {
  rev: number | undefined;
  pin: number;
}

/**
 * Session challenges and revocation stamps, shared by every pod, in the slot of the subject's nonces and pins
 * (so the two stamps of a token check are one MGET). On the stores' fail-fast client.
 */
export class SessionStore {
  private readonly consume;
  private readonly revokeOne;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly ack: WriteAck,
  ) {
    this.consume = defineScript<Consumed>(redis, 'relaySessionConsume', CONSUME);
    this.revokeOne = defineScript<number>(redis, 'relaySessionRevoke', REVOKE);
  }

  /** Stores a challenge for `seconds`, with the kind and side it is issued for. */
  async issue(challenge: string, issued: ChallengeFor, seconds: number): Promise<void> {
    const key = this.keys.sessionChallenge(issued.subject, challenge);
    await this.redis.set(key, `${issued.kind}:${issued.side}`, 'EX', seconds);
    await this.ack.confirm(key);
  }

  /** Exchanges a challenge once, if it was issued for `claimed`. */
  async exchange(challenge: string, claimed: ChallengeFor): Promise<Consumed> {
    const key = this.keys.sessionChallenge(claimed.subject, challenge);
    const consumed = await this.consume([key], [`${claimed.kind}:${claimed.side}`]);
    if (consumed === 'ok') await this.ack.confirm(key);
    return consumed;
  }

  /** Sets the subject side's revocation stamp, kept `keepMs`; returns it (ms). */
  async revoke(subject: string, side: Side, keepMs: number): Promise<number> {
    const key = this.keys.sessionRevocation(subject, side);
    const stamp = await this.revokeOne([key], [keepMs]);
    await this.ack.confirm(key);
    return stamp;
  }

  /** The side's revocation and pin stamps, in one command (a pin written as `1` before stamps is stamp 1). */
  async stamps(subject: string, side: Side): Promise<Stamps> {
    const [rev, pin] = await this.redis.mget(
      this.keys.sessionRevocation(subject, side),
      this.keys.authPin(subject, side),
    );
    return { rev: rev === null ? undefined : Number(rev), pin: pin === null ? 0 : Number(pin) };
  }
}
