/** One field a validation refusal names: a JSON pointer prefixed by where it was (`/body/chain`, `/params/id`). */
export interface ErrorDetail {
  field: string;
  message: string;
}

/** Code of a response this client cannot read: not the relay's error envelope, or not the answer expected. */
export const UNEXPECTED_RESPONSE = 'UNEXPECTED_RESPONSE';

/**
 * A refusal by the relay (its error envelope, docs/api.md#envelope-and-errors), or a response that is not one
 * (`code` UNEXPECTED_RESPONSE: a proxy's page, or a relay running another API_PROFILE than the client's).
 */
export class RelayError extends Error {
  override readonly name: string = 'RelayError';

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId: string | undefined,
    readonly details: ErrorDetail[] | undefined,
    /** Seconds to wait before retrying (`Retry-After`), where the relay said. */
    readonly retryAfter: number | undefined,
  ) {
    super(message);
  }
}

/** Code of a `SessionEnded` by `close()` or `revoke()` of the session itself: the relay said nothing. */
export const SESSION_CLOSED = 'SESSION_CLOSED';

/**
 * Why a session ended: `ended` the relay refused its token as ended (revoked, the side's pin changed, its signing
 * key retired), `refused` the relay refused to renew it (the keys no longer fit the pair), `closed` the app
 * closed or revoked it.
 */
export type SessionEndReason = 'ended' | 'refused' | 'closed';

/**
 * The session is over and renews no more (docs/api.md#sessions): every call of it rejects with this, its sockets
 * stop joining. A RelayError with the relay's answer that ended it (401 AUTH_EXPIRED "session ended", or the
 * renewal's refusal), or status 0 and the code SESSION_CLOSED. To go on, the app starts a new session (signing
 * a new challenge) or reacts as it sees fit: a revocation it did not make is a sign of a lost device.
 */
export class SessionEnded extends RelayError {
  override readonly name: string = 'SessionEnded';

  constructor(
    readonly reason: SessionEndReason,
    cause: RelayError | undefined,
  ) {
    super(
      cause?.status ?? 0,
      cause?.code ?? SESSION_CLOSED,
      cause ? `the session ended: ${cause.message}` : 'the session was closed',
      cause?.requestId,
      cause?.details,
      cause?.retryAfter,
    );
  }
}

/** Code of a `joined` that ended unanswered: `close()` came before the relay acknowledged a join. */
export const CLOSED_BEFORE_JOIN = 'CLOSED_BEFORE_JOIN';

/**
 * A socket `join` the relay refused for good, with the code of its acknowledgement (docs/api.md#join-and-leave:
 * `AUTH_*`, `INVALID_PARAMETER`), or `CLOSED_BEFORE_JOIN`.
 */
export class JoinError extends Error {
  override readonly name = 'JoinError';

  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

interface Envelope {
  success: false;
  error: { code: string; message: string; details?: ErrorDetail[]; requestId?: string };
}

function isEnvelope(body: unknown): body is Envelope {
  const error = (body as Envelope | null)?.error;
  return (
    (body as Envelope | null)?.success === false &&
    typeof error?.code === 'string' &&
    typeof error.message === 'string'
  );
}

/** The error a non-2xx response stands for. */
export function errorOf(status: number, headers: Headers, body: unknown): RelayError {
  const retryHeader = headers.get('retry-after');
  const retryAfter = retryHeader !== null && /^\d+$/.test(retryHeader) ? Number(retryHeader) : undefined;
  const headerId = headers.get('x-request-id') ?? undefined;
  if (!isEnvelope(body)) {
    return new RelayError(
      status,
      UNEXPECTED_RESPONSE,
      `HTTP ${status} without the relay's error envelope`,
      headerId,
      undefined,
      retryAfter,
    );
  }
  const { code, message, details, requestId } = body.error;
  return new RelayError(status, code, message, requestId ?? headerId, details, retryAfter);
}
