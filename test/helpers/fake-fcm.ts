import { generateKeyPairSync, verify, type KeyObject } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeUpstream, type FakeReply, type RecordedRequest } from './fake-upstream.js';

export const PROJECT_ID = 'relay-test';
export const CLIENT_EMAIL = 'relay-push@relay-test.iam.gserviceaccount.com';
export const SEND_PATH = `/v1/projects/${PROJECT_ID}/messages:send`;
const TOKEN_PATH = '/token';
const SCOPE = 'https://www.googleapis.com/auth/firebase.messaging';

/** Google's error body for the FCM HTTP v1 API, with an FcmError detail when `errorCode` is given. */
export function fcmError(
  code: number,
  status: string,
  errorCode?: string,
  extraDetails: object[] = [],
): FakeReply {
  const details = [
    ...(errorCode ? [{ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode }] : []),
    ...extraDetails,
  ];
  return {
    status: code,
    body: { error: { code, message: `fake ${status}`, status, ...(details.length ? { details } : {}) } },
  };
}

export const UNREGISTERED = fcmError(404, 'NOT_FOUND', 'UNREGISTERED');
export const INVALID_TOKEN = fcmError(400, 'INVALID_ARGUMENT', 'INVALID_ARGUMENT');
export const SENDER_ID_MISMATCH = fcmError(403, 'PERMISSION_DENIED', 'SENDER_ID_MISMATCH');
export const UNAVAILABLE = fcmError(503, 'UNAVAILABLE', 'UNAVAILABLE');
/** Apple refused the project's APNs key: a 401 that is not about the relay's access token. */
export const THIRD_PARTY_AUTH_ERROR = fcmError(401, 'UNAUTHENTICATED', 'THIRD_PARTY_AUTH_ERROR');
/** FCM refused the access token (no FcmError detail, as Google answers it). */
export const UNAUTHENTICATED = fcmError(401, 'UNAUTHENTICATED');

function decodePart(part: string | undefined): Record<string, unknown> {
  return JSON.parse(Buffer.from(part ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
}

/**
 * Google's OAuth 2.0 token endpoint and FCM's send endpoint on 127.0.0.1. The token endpoint verifies the
 * service-account JWT against the public key of the key pair it made; the send endpoint accepts only access
 * tokens it issued and not revoked, and answers each device token from its script (then 200).
 */
export class FakeFcm {
  readonly upstream = new FakeUpstream();
  private readonly publicKey: KeyObject;
  private readonly privateKeyPem: string;
  /** Why token requests were refused (a correct relay causes none). */
  readonly jwtErrors: string[] = [];
  private readonly valid = new Set<string>();
  private issued = 0;
  private readonly scripts = new Map<string, FakeReply[]>();

  constructor() {
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    this.publicKey = publicKey;
    this.privateKeyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  }

  async start(): Promise<this> {
    await this.upstream.respond((req) => this.answer(req)).start();
    return this;
  }

  stop(): Promise<void> {
    return this.upstream.stop();
  }

  get url(): string {
    return this.upstream.url;
  }

  get tokenRequests(): RecordedRequest[] {
    return this.upstream.requests.filter((r) => r.path === TOKEN_PATH);
  }

  get sends(): RecordedRequest[] {
    return this.upstream.requests.filter((r) => r.path === SEND_PATH);
  }

  /** The device tokens of the send requests, in order of arrival. */
  sentTo(): string[] {
    return this.sends.map((r) => (r.json as { message: { token: string } }).message.token);
  }

  /** The next answers for one device token, in turn; after them it gets 200. */
  script(deviceToken: string, ...replies: FakeReply[]): this {
    this.scripts.set(deviceToken, replies);
    return this;
  }

  /** Every access token issued so far stops working (as after a key rotation). */
  revokeAll(): void {
    this.valid.clear();
  }

  /** While true, every send is refused with 401 UNAUTHENTICATED, however fresh its access token. */
  refuseAccessTokens = false;

  /** A service-account key file as Google issues it, pointing at this fake's token endpoint. */
  serviceAccountFile(overrides: Record<string, unknown> = {}): string {
    const file = join(mkdtempSync(join(tmpdir(), 'relay-fcm-')), 'service-account.json');
    const account = {
      type: 'service_account',
      project_id: PROJECT_ID,
      private_key_id: 'fake-key-id',
      private_key: this.privateKeyPem,
      client_email: CLIENT_EMAIL,
      client_id: '100000000000000000000',
      token_uri: `${this.url}${TOKEN_PATH}`,
      ...overrides,
    };
    writeFileSync(file, JSON.stringify(account));
    return file;
  }

  private answer(req: RecordedRequest): FakeReply {
    if (req.method === 'POST' && req.path === TOKEN_PATH) return this.token(req);
    if (req.method === 'POST' && req.path === SEND_PATH) return this.send(req);
    return fcmError(404, 'NOT_FOUND');
  }

  private token(req: RecordedRequest): FakeReply {
    const form = new URLSearchParams(req.body);
    const problem = this.checkAssertion(form);
    if (problem) {
      this.jwtErrors.push(problem);
      return { status: 400, body: { error: 'invalid_grant', error_description: problem } };
    }
    const accessToken = `ya29.fake-${++this.issued}`;
    this.valid.add(accessToken);
    return { status: 200, body: { access_token: accessToken, expires_in: 3599, token_type: 'Bearer' } };
  }

  private checkAssertion(form: URLSearchParams): string | undefined {
    if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') return 'grant_type';
    const parts = (form.get('assertion') ?? '').split('.');
    if (parts.length !== 3) return 'assertion is not a JWT';
    const [header, claims, signature] = parts as [string, string, string];
    if (decodePart(header).alg !== 'RS256') return 'alg';
    const signed = verify(
      'sha256',
      Buffer.from(`${header}.${claims}`),
      this.publicKey,
      Buffer.from(signature, 'base64url'),
    );
    if (!signed) return 'signature';
    const c = decodePart(claims);
    const now = Math.floor(Date.now() / 1000);
    if (c.iss !== CLIENT_EMAIL) return 'iss';
    if (c.scope !== SCOPE) return 'scope';
    if (c.aud !== `${this.url}${TOKEN_PATH}`) return 'aud';
    if (typeof c.iat !== 'number' || Math.abs(c.iat - now) > 60) return 'iat';
    if (typeof c.exp !== 'number' || c.exp <= now || c.exp - c.iat > 3600) return 'exp';
    return undefined;
  }

  private send(req: RecordedRequest): FakeReply {
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!bearer || !this.valid.has(bearer) || this.refuseAccessTokens) return UNAUTHENTICATED;
    const token = (req.json as { message?: { token?: string } } | undefined)?.message?.token ?? '';
    const reply = this.scripts.get(token)?.shift();
    return reply ?? { status: 200, body: { name: `projects/${PROJECT_ID}/messages/${Date.now()}` } };
  }
}
