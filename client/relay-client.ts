import { errorOf, RelayError, type SessionEnded, UNEXPECTED_RESPONSE } from './errors.js';
import { RelayEvents, type EventOptions, type JoinToken, type Side } from './events.js';
import { endsSession, TokenKeeper, type SessionGrant, type SessionOptions } from './session.js';
import {
  publicKeyOf,
  signBody,
  signWalletBody,
  walletIdentityOf,
  wkIdentityOf,
  type PairKeys,
  type Purpose,
} from './signing.js';
import type {
  Ack,
  ActionRecord,
  ActionRequest,
  ActionStream,
  ContactRequest,
  Health,
  NetworkFee,
  NoncesStatus,
  PairPresence,
  PartnerSignature,
  Queued,
  Rates,
  RecoveryPub,
  RecoveryPubRequest,
  Services,
  SyncRecord,
  SyncRequest,
  TicketRequest,
  TokenCounts,
  TokenInfo,
  TokenRequest,
} from './types.js';

/** The relay's `API_PROFILE`: under `ssp-apps` some reads and the partner signer answer the payload alone. */
export type ApiProfile = 'standard' | 'ssp-apps';

export interface RelayClientOptions {
  /** The relay's origin, e.g. `https://relay.example.com`. */
  baseUrl: string;
  /** The profile the relay runs (default `standard`). */
  profile?: ApiProfile;
  /** The fetch to call (default the global one). */
  fetch?: typeof fetch;
}

/** Where a stream read starts (docs/api.md#stream-read-and-long-poll). */
export interface PollOptions {
  /** The direction: the records to the key app or to the wallet app. */
  to: Side;
  /** The offset of the last record the caller has in that direction (0: none). */
  after: number;
  /** The epoch of that offset: required when `after` > 0. */
  epoch?: string | null;
  /** Seconds (0–25) the relay may hold the request while there is nothing to return (default 0). */
  wait?: number;
}

/** A write signed with the pair's keys when `sign` is given (docs/api.md#identity-signed-requests). */
export interface WriteOptions {
  sign?: PairKeys;
}

/** What a session's token is bound to: a pair's `wkIdentity`, or a `walletIdentity`. */
export interface Subject {
  kind: 'pair' | 'wallet';
  identity: string;
}

/** One request to the relay. */
export interface Call {
  method: 'GET' | 'POST';
  path: string;
  body?: Readonly<Record<string, unknown>>;
  /** Answered without the envelope under `ssp-apps`. */
  bareForApps?: true;
  /** Revalidated with the ETag of its last answer: a 304 answers that answer's payload again. */
  conditional?: true;
  /** The subject the call concerns, where the relay accepts a session's token (docs/api.md#sessions). */
  subject?: Subject;
  /** `Authorization: Bearer <token>`. */
  token?: string;
}

const pairOf = (wkIdentity: string): Subject => ({ kind: 'pair', identity: wkIdentity });

const segment = encodeURIComponent;

/** How many paths' last answers a client keeps for revalidation; the oldest go first. */
const VALIDATED_PATHS = 100;

/** Every endpoint of the relay (docs/api.md), answering the payload (`data`) whatever the profile. */
export class RelayClient {
  readonly baseUrl: string;
  readonly profile: ApiProfile;
  private readonly fetch: typeof fetch;
  /** The ETag and payload of each conditional read's last 200, by path, oldest first. */
  private readonly validated = new Map<string, { tag: string; data: unknown }>();

  constructor(options: RelayClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.profile = options.profile ?? 'standard';
    this.fetch = options.fetch ?? globalThis.fetch;
  }

  postSync(body: SyncRequest, options: WriteOptions = {}): Promise<SyncRecord> {
    return this.write('/v1/sync', { ...body }, 'sync', options.sign);
  }

  getSync(walletIdentity: string): Promise<SyncRecord> {
    const path = `/v1/sync/${segment(walletIdentity)}`;
    return this.call({
      method: 'GET',
      path,
      bareForApps: true,
      subject: { kind: 'wallet', identity: walletIdentity },
    });
  }

  postAction(body: ActionRequest, options: WriteOptions = {}): Promise<ActionRecord> {
    return this.write('/v1/action', { ...body }, 'action', options.sign, pairOf(body.wkIdentity));
  }

  /** Sends the ETag of the last record read for the pair: while it is unchanged, the relay answers 304 and this the same record. */
  getAction(wkIdentity: string): Promise<ActionRecord> {
    const path = `/v1/action/${segment(wkIdentity)}`;
    return this.call({
      method: 'GET',
      path,
      bareForApps: true,
      conditional: true,
      subject: pairOf(wkIdentity),
    });
  }

  /**
   * Acknowledges the record `id` sent to this side (docs/api.md#acks-and-receipts): signed with the pair's keys
   * (purpose `ack`) unless the relay runs `AUTH_ROUTES=ack=off`. A repeat answers the first receipt.
   */
  ackAction(wkIdentity: string, id: string, options: WriteOptions = {}): Promise<Ack> {
    const sent = options.sign ? signBody({}, 'ack', options.sign, { wkIdentity }) : {};
    return this.call({
      method: 'POST',
      path: `/v1/action/${segment(wkIdentity)}/${segment(id)}/ack`,
      body: sent,
      subject: pairOf(wkIdentity),
    });
  }

  /**
   * The records of one direction after a position, held by the relay up to `wait` seconds while there are none
   * (a long-poll): pass the answer's `epoch` and `offset` as the next call's `epoch` and `after`.
   */
  pollAction(wkIdentity: string, { to, after, epoch, wait }: PollOptions): Promise<ActionStream> {
    const query = new URLSearchParams({ to, after: String(after) });
    if (epoch !== undefined && epoch !== null) query.set('epoch', epoch);
    if (wait !== undefined) query.set('wait', String(wait));
    const path = `/v1/action/${segment(wkIdentity)}?${query.toString()}`;
    return this.call({ method: 'GET', path, bareForApps: true, subject: pairOf(wkIdentity) });
  }

  postToken(body: TokenRequest, options: WriteOptions = {}): Promise<TokenCounts> {
    return this.write('/v1/token', { ...body }, 'token', options.sign, pairOf(body.wkIdentity));
  }

  getRates(): Promise<Rates> {
    return this.call({ method: 'GET', path: '/v1/rates', bareForApps: true });
  }

  getNetworkFees(): Promise<NetworkFee[]> {
    return this.call({ method: 'GET', path: '/v1/networkfees', bareForApps: true });
  }

  getTokenInfo(network: string, address: string): Promise<TokenInfo> {
    const path = `/v1/tokeninfo/${segment(network)}/${segment(address)}`;
    return this.call({ method: 'GET', path, bareForApps: true });
  }

  getServices(): Promise<Services> {
    return this.call({ method: 'GET', path: '/v1/services', bareForApps: true });
  }

  /** The partner's HMAC of `parameters`, signed in the order given. */
  signPartner(partner: string, parameters: Record<string, string>): Promise<PartnerSignature> {
    const path = `/v1/sign/${segment(partner)}`;
    return this.call({ method: 'POST', path, body: parameters, bareForApps: true });
  }

  postTicket(body: TicketRequest): Promise<Queued> {
    return this.call({ method: 'POST', path: '/v1/ticket', body: { ...body } });
  }

  postContact(body: ContactRequest): Promise<Queued> {
    return this.call({ method: 'POST', path: '/v1/contact', body: { ...body } });
  }

  /** Always signed (purpose `sync`), by the key app's key. */
  postRecoveryPub(body: RecoveryPubRequest, options: Required<WriteOptions>): Promise<RecoveryPub> {
    return this.write('/v1/recoverypub', { ...body }, 'sync', options.sign);
  }

  getRecoveryPub(wkIdentity: string): Promise<RecoveryPub> {
    const path = `/v1/recoverypub/${segment(wkIdentity)}`;
    return this.call({ method: 'GET', path, bareForApps: true, subject: pairOf(wkIdentity) });
  }

  /** Whether each side of the pair has a socket in the pair's room, and when it was last seen. */
  getPresence(wkIdentity: string): Promise<PairPresence> {
    return this.call({ method: 'GET', path: `/v1/presence/${segment(wkIdentity)}`, bareForApps: true });
  }

  getNoncesStatus(wkIdentity: string): Promise<NoncesStatus> {
    return this.call({ method: 'GET', path: `/v1/nonces/status/${segment(wkIdentity)}` });
  }

  /** Liveness: `{ status: 'ok' }` while the process runs. */
  health(): Promise<Health> {
    return this.call({ method: 'GET', path: '/healthz' });
  }

  /** Readiness: `{ status: 'ready' }` when Redis answers and the instance is not draining. */
  ready(): Promise<Health> {
    return this.call({ method: 'GET', path: '/readyz' });
  }

  /** The relay's events for one pair on one side's socket path. */
  connectEvents(side: Side, options: EventOptions): RelayEvents {
    return new RelayEvents(this.baseUrl, side, options);
  }

  /**
   * A session for one side of the pair (docs/api.md#sessions): signs a challenge once with `keys` (purpose
   * `session`), then carries the token on every call of that pair and on its sockets' joins, and renews it
   * before its end. Rejects with the exchange's RelayError (503 UNAVAILABLE: the relay runs without sessions).
   */
  async session(side: Side, keys: PairKeys, options: SessionOptions = {}): Promise<RelaySession> {
    const wkIdentity = wkIdentityOf(keys.walletPublicKey, keys.keyPublicKey, options.testnet ? 'tb' : 'bc');
    const subject = pairOf(wkIdentity);
    return this.startSession(side, subject, options, async () => {
      const asked = { wkIdentity, side };
      const body = { ...asked, challenge: await this.challenge(asked) };
      return this.exchange({ ...body, ...signBody(body, 'session', keys, { nonce: body.challenge }) });
    });
  }

  /**
   * A session of the wallet identity key alone, for reading its pairing record (`getSync`) before the wallet
   * knows the pair: its subject is the key's `walletIdentity` (P2PKH address).
   */
  async walletSession(privateKey: Uint8Array | string, options: SessionOptions = {}): Promise<RelaySession> {
    const walletIdentity = walletIdentityOf(publicKeyOf(privateKey), options.testnet);
    const subject: Subject = { kind: 'wallet', identity: walletIdentity };
    return this.startSession('wallet', subject, options, async () => {
      const body = { walletIdentity, challenge: await this.challenge({ walletIdentity }) };
      return this.exchange({
        ...body,
        ...signWalletBody(body, 'session', privateKey, { nonce: body.challenge }),
      });
    });
  }

  private async startSession(
    side: Side,
    subject: Subject,
    options: SessionOptions,
    exchange: () => Promise<SessionGrant>,
  ): Promise<RelaySession> {
    const keeper = await TokenKeeper.start(exchange, options);
    return new RelaySession(
      { baseUrl: this.baseUrl, profile: this.profile, fetch: this.fetch },
      side,
      subject,
      keeper,
    );
  }

  private async challenge(body: Record<string, unknown>): Promise<string> {
    const { challenge } = await this.call<{ challenge: string }>({
      method: 'POST',
      path: '/v1/session/challenge',
      body,
    });
    return challenge;
  }

  private exchange(body: Record<string, unknown>): Promise<SessionGrant> {
    return this.call({ method: 'POST', path: '/v1/session', body });
  }

  private write<T>(
    path: string,
    body: Record<string, unknown>,
    purpose: Purpose,
    keys: PairKeys | undefined,
    subject?: Subject,
  ): Promise<T> {
    // A signed write carries no token: the relay refuses the two together.
    if (keys) return this.call({ method: 'POST', path, body: { ...body, ...signBody(body, purpose, keys) } });
    return this.call({ method: 'POST', path, body, ...(subject && { subject }) });
  }

  /** Sends `call` and answers its payload; a session's calls pass through here with their token. */
  protected async call<T>(call: Call): Promise<T> {
    const { method, path, body, conditional, token } = call;
    const held = conditional && this.validated.get(path);
    const headers: Record<string, string> = {
      ...(body && { 'content-type': 'application/json' }),
      ...(held && { 'if-none-match': held.tag }),
      ...(token !== undefined && { authorization: `Bearer ${token}` }),
    };
    const res = await this.fetch(this.baseUrl + path, {
      method,
      headers,
      ...(body && { body: JSON.stringify(body) }),
    });
    if (held && res.status === 304) return held.data as T;
    if (conditional) this.validated.delete(path);
    const data = this.payload(call, res, await res.text());
    const tag = res.headers.get('etag');
    if (conditional && tag !== null) {
      this.validated.set(path, { tag, data });
      if (this.validated.size > VALIDATED_PATHS) this.validated.delete(this.validated.keys().next().value!);
    }
    return data as T;
  }

  private payload({ method, path, bareForApps }: Call, res: Response, text: string): unknown {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (!res.ok) throw errorOf(res.status, res.headers, parsed);
    if (bareForApps && this.profile === 'ssp-apps' && parsed !== undefined) return parsed;
    const envelope = parsed as { success?: unknown; data?: unknown } | undefined;
    if (envelope?.success === true && 'data' in envelope) return envelope.data;
    throw new RelayError(
      res.status,
      UNEXPECTED_RESPONSE,
      `${method} ${path}: a success this client cannot read (does the relay run API_PROFILE=${this.profile}?)`,
      res.headers.get('x-request-id') ?? undefined,
      undefined,
      undefined,
    );
  }
}

/**
 * A RelayClient holding a session (docs/api.md#sessions): every call concerning its subject carries
 * `Authorization: Bearer <token>`, and a socket it connects for its pair and side joins with the token; other
 * calls go as a plain client's. A call answered 401 AUTH_EXPIRED because the token ran out renews it and is sent
 * once more; a call answered that the session ended rejects with SessionEnded, as every call does from then on.
 */
export class RelaySession extends RelayClient {
  /** Resolves once, with the reason, when the session ends: revoked, renewal refused, or closed. */
  readonly ended: Promise<SessionEnded>;

  constructor(
    options: RelayClientOptions,
    /** The side the token is bound to (`wallet` for a wallet session). */
    readonly side: Side,
    /** The pair's `wkIdentity` or the wallet's `walletIdentity`. */
    readonly subject: Subject,
    private readonly keeper: TokenKeeper,
  ) {
    super(options);
    this.ended = keeper.ended;
  }

  /** The current token and when it ends (`expiresAt`, `expiresIn` as the relay answered the last exchange). */
  get grant(): SessionGrant {
    return this.keeper.current;
  }

  /** A new token now (the timer does it on its own before the token's end). */
  renew(): Promise<void> {
    return this.keeper.renew();
  }

  /**
   * Ends the token on every pod of the relay (`POST /v1/session/revoke`) and this session with it. For a pair,
   * `side` may name the other side instead: its tokens end, this session goes on.
   */
  async revoke(side: Side = this.side): Promise<{ revokedAt: string }> {
    const body =
      this.subject.kind === 'pair'
        ? { wkIdentity: this.subject.identity, side }
        : { walletIdentity: this.subject.identity };
    const answer = await this.call<{ revokedAt: string }>({
      method: 'POST',
      path: '/v1/session/revoke',
      body,
      subject: this.subject,
    });
    if (side === this.side) this.close();
    return answer;
  }

  /** Ends the session here, without asking the relay: no more renewals; calls reject with SessionEnded. */
  close(): void {
    this.keeper.end('closed');
  }

  /** The pair's events; when they are this session's pair and side, every join carries the token. */
  override connectEvents(side: Side, options: EventOptions): RelayEvents {
    const fits = this.fits({ kind: 'pair', identity: options.wkIdentity }) && side === this.side;
    return new RelayEvents(
      this.baseUrl,
      side,
      options,
      fits ? this.joinToken(options.wkIdentity) : undefined,
    );
  }

  protected override async call<T>(call: Call): Promise<T> {
    if (!call.subject || !this.fits(call.subject)) return super.call(call);
    for (let attempt = 0; ; attempt++) {
      try {
        return await super.call({ ...call, token: await this.keeper.token() });
      } catch (err) {
        if (endsSession(err)) throw this.keeper.end('ended', err);
        // A token that ran out (its timer held back): renewed, and the call sent once more.
        if (attempt > 0 || !(err instanceof RelayError) || err.code !== 'AUTH_EXPIRED' || err.status !== 401)
          throw err;
        await this.keeper.renew();
      }
    }
  }

  private fits(subject: Subject): boolean {
    return subject.kind === this.subject.kind && subject.identity === this.subject.identity;
  }

  private joinToken(wkIdentity: string): JoinToken {
    return {
      token: () => this.keeper.token(),
      // A read with the token tells a session that ended from a token that ran out (which the read renews).
      confirm: async () => {
        await this.getAction(wkIdentity).catch((err: unknown) => {
          if (err instanceof RelayError && err.status === 401) throw err;
        });
      },
    };
  }
}
