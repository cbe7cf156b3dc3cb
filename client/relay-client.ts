import { errorOf, RelayError, UNEXPECTED_RESPONSE } from './errors.js';
import { RelayEvents, type EventOptions, type Side } from './events.js';
import { signBody, type PairKeys, type Purpose } from './signing.js';
import type {
  ActionRecord,
  ActionRequest,
  ActionStream,
  ContactRequest,
  Health,
  NetworkFee,
  NoncesStatus,
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

interface Call {
  method: 'GET' | 'POST';
  path: string;
  body?: Readonly<Record<string, unknown>>;
  /** Answered without the envelope under `ssp-apps`. */
  bareForApps?: true;
  /** Revalidated with the ETag of its last answer: a 304 answers that answer's payload again. */
  conditional?: true;
}

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
    return this.call({ method: 'GET', path: `/v1/sync/${segment(walletIdentity)}`, bareForApps: true });
  }

  postAction(body: ActionRequest, options: WriteOptions = {}): Promise<ActionRecord> {
    return this.write('/v1/action', { ...body }, 'action', options.sign);
  }

  /** Sends the ETag of the last record read for the pair: while it is unchanged, the relay answers 304 and this the same record. */
  getAction(wkIdentity: string): Promise<ActionRecord> {
    const path = `/v1/action/${segment(wkIdentity)}`;
    return this.call({ method: 'GET', path, bareForApps: true, conditional: true });
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
    return this.call({ method: 'GET', path, bareForApps: true });
  }

  postToken(body: TokenRequest, options: WriteOptions = {}): Promise<TokenCounts> {
    return this.write('/v1/token', { ...body }, 'token', options.sign);
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
    return this.call({ method: 'GET', path: `/v1/recoverypub/${segment(wkIdentity)}`, bareForApps: true });
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

  private write<T>(
    path: string,
    body: Record<string, unknown>,
    purpose: Purpose,
    keys: PairKeys | undefined,
  ): Promise<T> {
    const sent = keys ? { ...body, ...signBody(body, purpose, keys) } : body;
    return this.call({ method: 'POST', path, body: sent });
  }

  private async call<T>(call: Call): Promise<T> {
    const { method, path, body, conditional } = call;
    const held = conditional && this.validated.get(path);
    const res = await this.fetch(this.baseUrl + path, {
      method,
      ...(body && { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
      ...(held && { headers: { 'if-none-match': held.tag } }),
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
