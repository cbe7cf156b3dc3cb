import type { SignedRoute } from '../core/signed-routes.js';
import type { CoreConfig } from '../core/config/config.js';
import type { MailboxConfig } from './variables.js';
import type { MountedRoute, StoredAnswer, WriteGuards } from '../core/feature.js';
import { idle, okJson, type RelayContext } from '../core/http/context.js';
import { koaPath, type RouteSpec } from '../core/http/route-spec.js';
import { AppError } from '../core/errors.js';
import { readWithin } from '../core/limits/rate-limit.js';
import { errorFields } from '../core/log.js';
import {
  ackMetrics,
  longPollMetrics,
  notModifiedCounter,
  recordIntentAppendMiss,
  streamMetrics,
  type LongPollOutcome,
} from './metrics.js';
import { answeredNotModified, namedTags, namesCurrentTag } from '../core/http/conditional.js';
import { validator } from '../core/validation/validate.js';
import { ackBody, ackParams, actionBody, streamQuery } from './schema.js';
import { ipBucket } from '../core/http/client-ip.js';
import type { Side } from '../core/sides.js';
import type { LongPolls } from './long-poll.js';
import { idParams } from '../core/validation/common-schema.js';
import { acknowledge, type ReceiptEvents } from './acks.js';
import { bindingRefusal } from '../identity/index.js';
import { actionTypeRule, pushSide, unsignedGuard } from '../action-types/index.js';
import {
  idTag,
  mailboxRead,
  namedIds,
  PendingVerified,
  recordTag,
  withReceipt,
  type Acknowledged,
  type ActionRecord,
  type ActionRequest,
  type ActionStore,
  type StreamRead,
  type WriteOrigin,
} from './store.js';
import { newRecordId } from '../core/record-id.js';

const parseBody = validator<ActionRequest>('body', actionBody);
const parseParams = validator<{ id: string }>('params', idParams);
const parseAckParams = validator<{ wkIdentity: string; id: string }>('params', ackParams);

interface StreamQuery {
  to: Side;
  after: string;
  epoch?: string;
  wait?: string;
}

const checkQuery = validator<StreamQuery>('query', streamQuery);

/** A stream read's parameters (docs/api.md#stream-read-and-long-poll), or undefined for the plain read. */
function parseQuery(query: Record<string, unknown>): StreamQuery | undefined {
  if (!['to', 'after', 'epoch', 'wait'].some((name) => name in query)) return undefined;
  const parsed = checkQuery(query);
  if (Number(parsed.after) > Number.MAX_SAFE_INTEGER) {
    throw new AppError('INVALID_PARAMETER', 'A query parameter is invalid.', {
      details: [{ field: '/query/after', message: 'must be an integer from 0 to 2^53 − 1' }],
    });
  }
  return parsed;
}

/** A stream read's answer as JSON text: the records spliced in as stored, each with `delivered` once acknowledged. */
function streamJson({ epoch, offset, recovered, records }: StreamRead): string {
  const list = records.map(withReceipt).join(',');
  return `{"epoch":${JSON.stringify(epoch)},"offset":${offset},"recovered":${recovered},"records":[${list}]}`;
}

/**
 * How records are shaped: their lifetime, and whether they also carry `expireAt` (API_PROFILE=ssp-apps); and the
 * action types accepted unsigned whatever the mode or pin (AUTH_UNSIGNED_ACTIONS).
 */
export interface ActionSettings {
  ttlSeconds: number;
  expireAt: boolean;
  unsignedActions: readonly string[];
}

/**
 * Who wrote it: signed, a request to the key; signed otherwise (a reply is no pending request), or unsigned of a
 * type pins guard; unsigned of an exempt or unknown type.
 */
function originOf(action: string, verified: boolean, settings: ActionSettings): WriteOrigin {
  if (verified) return actionTypeRule(action)?.side === 'key' ? 'verified-request' : 'plain';
  return unsignedGuard(action, settings.unsignedActions) === 'sender' ? 'plain' : 'unguarded';
}

function toRecord(body: ActionRequest, shape: ActionSettings, id: string, now = Date.now()): ActionRecord {
  const expiresAt = new Date(now + shape.ttlSeconds * 1000).toISOString();
  return {
    id,
    chain: body.chain,
    wkIdentity: body.wkIdentity,
    action: body.action,
    payload: body.payload,
    ...(body.path !== undefined ? { path: body.path } : {}),
    ...(body.utxos !== undefined ? { utxos: body.utxos } : {}),
    createdAt: new Date(now).toISOString(),
    expiresAt,
    ...(shape.expireAt ? { expireAt: expiresAt } : {}),
  };
}

/** The mailbox's record if it is still the one `id` names (records are serialized id first). */
function storedAction(store: ActionStore): StoredAnswer {
  return async (body, id) => {
    const json = await store.readJson(String(body.wkIdentity));
    return json?.startsWith(`{"id":${JSON.stringify(id)},`) ? json : null;
  };
}

/** What happens once an action is stored or acknowledged; must neither throw nor delay the response. */
export interface ActionEvents extends ReceiptEvents {
  stored(record: ActionRecord, json: string): void;
}

export const ACTION_BODY_LIMIT = 2 * 1024 * 1024;

export const actionWrite = {
  method: 'post',
  path: '/v1/action',
  summary: "Replaces the pair's action mailbox and notifies the other app",
  doc: 'post-v1action',
  body: { component: 'ActionRequest', schema: actionBody, limitBytes: ACTION_BODY_LIMIT },
  data: 'ActionRecord',
  errors: ['CONFLICT', 'UNAVAILABLE'],
  signedAs: 'action',
  bearer: 'write',
} satisfies RouteSpec<SignedRoute>;

export const actionRead = {
  method: 'get',
  path: '/v1/action/{id}',
  summary: "Reads the pair's action mailbox (id is the wkIdentity); reads never delete",
  doc: 'get-v1actionid',
  params: idParams,
  data: 'ActionRecord',
  query: {
    schema: streamQuery,
    data: 'ActionStream',
    description:
      'a stream read (docs/api.md#stream-read-and-long-poll): to and after go together, epoch is required when after > 0, wait holds the request (seconds, 0–25) while there is nothing to return; never 404, no ETag',
  },
  bareForApps: true,
  errors: ['INVALID_PARAMETER', 'NOT_FOUND', 'UNAVAILABLE'],
  consumesLimitInScript: true,
  conditional: true,
  bearer: 'read',
} satisfies RouteSpec;

export const actionAck = {
  method: 'post',
  path: '/v1/action/{wkIdentity}/{id}/ack',
  summary: 'Acknowledges a record: the app of its target side received it (the first ack is the receipt)',
  doc: 'post-v1actionwkidentityidack',
  params: ackParams,
  body: { component: 'AckRequest', schema: ackBody, limitBytes: 16 * 1024 },
  data: 'Ack',
  errors: ['INVALID_PARAMETER', 'NOT_FOUND', 'UNAVAILABLE'],
  signedAs: 'ack',
} satisfies RouteSpec<SignedRoute>;

/** An ack's answer: the record acknowledged and its receipt. */
function ackAnswer(result: Acknowledged): string {
  const { wkIdentity, id, action, epoch, offset, side, at } = result.event;
  return JSON.stringify({ id, wkIdentity, action, epoch, offset, delivered: { side, at } });
}

const NO_RECORD = 'No retained record of this pair has that id.';

/** What the mailbox's routes use of the app. */
export interface ActionDeps {
  config: Pick<CoreConfig, 'apiProfile'> & MailboxConfig & { auth: { unsignedActions: readonly string[] } };
  /**
   * The pair's mailbox, shared with the socket replay. On its own fail-fast client (`actions`): megabyte payloads
   * go through it, so a flood of large reads queues behind itself, never in front of other requests' commands.
   */
  stores: { actions: ActionStore };
  guards: WriteGuards;
  /** Told of every stored action (the socket emitter). */
  actionEvents: ActionEvents;
  /** The stream reads this pod holds. */
  longPolls: LongPolls;
}

/**
 * A stream read: one point of the rate limit, the direction's records after the client's position and, when there
 * are none to give yet, the hold (docs/api.md#stream-read-and-long-poll).
 */
async function answerStream(
  ctx: RelayContext,
  store: ActionStore,
  longPolls: LongPolls,
  wkIdentity: string,
  query: StreamQuery,
): Promise<void> {
  await ctx.state.limit?.consume();
  const side = query.to;
  const since = { offset: Number(query.after), ...(query.epoch !== undefined ? { epoch: query.epoch } : {}) };
  let read = await store.readStream(wkIdentity, side, since);
  let outcome: LongPollOutcome = 'immediate';
  const waitMs = Number(query.wait ?? 0) * 1000;
  if (read.records.length === 0 && read.recovered && waitMs > 0) {
    const ip = ipBucket(ctx.ip);
    const refusal = longPolls.refusal(ip);
    if (refusal !== undefined) outcome = refusal;
    else {
      // Held without an answer slot of its address, and outside the request duration metric.
      const gone = (end: () => void) => (ctx.res.closed ? end() : ctx.res.once('close', end));
      const held = longPolls.hold(ip, side, wkIdentity, waitMs, gone, async () => {
        read = await store.readStream(wkIdentity, side, since);
        return read.records.length > 0 || !read.recovered;
      });
      const ending = await idle(ctx, held);
      outcome = ending === 'stored' ? 'records' : ending;
    }
  }
  streamMetrics.recovery('poll', side, read.recovered);
  longPollMetrics.answered(outcome);
  ctx.set('Cache-Control', 'no-cache');
  okJson(ctx, streamJson(read));
}

/**
 * `charge` charges each POST's body, refused or not, to the client's byte budget (see core/limits/rate-limit.ts);
 * `signed` checks and removes an identity signature (see identity/route-guard.ts).
 */
export const actionRoutes: MountedRoute<ActionDeps>[] = [
  {
    spec: actionWrite,
    handling: ({ config, stores, guards, actionEvents: events }) => {
      const store = stores.actions;
      const settings: ActionSettings = {
        ttlSeconds: config.action.ttlSeconds,
        expireAt: config.apiProfile === 'ssp-apps',
        unsignedActions: config.auth.unsignedActions,
      };
      return {
        charge: guards.writeBudget,
        guards: [guards.signed(actionWrite.signedAs, storedAction(store))],
        handler: async (ctx) => {
          const { writeId } = ctx.state;
          const record = toRecord(parseBody(ctx.request.body), settings, writeId ?? newRecordId());
          const origin = originOf(record.action, writeId !== undefined, settings);
          ctx.state.writing = true;
          const {
            json,
            record: stored,
            intentMissed,
          } = await store
            .save(record, pushSide(record.action) !== undefined, origin)
            .catch((err: unknown) => {
              if (!(err instanceof PendingVerified)) throw err;
              throw new AppError(
                'CONFLICT',
                'A signed request of this pair is pending; send this once it is answered or has expired.',
              );
            });
          // The emit runs after this handler's awaits (setImmediate), so it never delays or fails the answer.
          events.stored(stored, json);
          // A push intent that could not be appended never fails a stored action: the socket event and GET deliver it.
          if (intentMissed !== undefined) {
            recordIntentAppendMiss();
            ctx.state.log.warn('push intent not appended', {
              recordId: record.id,
              action: record.action,
              ...errorFields(intentMissed),
            });
          }
          okJson(ctx, json);
        },
      };
    },
  },
  {
    spec: actionRead,
    handling: ({ stores, guards, longPolls }) => {
      const countNotModified = notModifiedCounter(koaPath(actionRead));
      return {
        guards: [guards.sessionRead('pair')],
        handler: async (ctx) => {
          const { id } = parseParams({ ...ctx.params });
          const query = parseQuery({ ...ctx.query });
          if (query) return answerStream(ctx, stores.actions, longPolls, id, query);
          const field = ctx.req.headers['if-none-match'];
          const named = field === undefined ? [] : namedIds(namedTags(field));
          let read = mailboxRead(await readWithin(ctx.state.limit, stores.actions.recordRead(id, named)));
          if (read !== null && !('json' in read)) {
            // The record the client has, not read: a 304 unless its receipt changed since the client's tag.
            const tag = idTag(read.id, read.receipt);
            if (namesCurrentTag(field, tag) && answeredNotModified(ctx, tag)) return countNotModified();
            // The read above counted against the rate limit: this one, for the record itself, does not.
            read = mailboxRead(await stores.actions.recordRead(id).unlimited());
          }
          if (read === null || !('json' in read))
            throw new AppError('NOT_FOUND', 'The action mailbox of this pair is empty or expired.');
          const tag = recordTag(read.json, read.receipt);
          if (tag !== null && answeredNotModified(ctx, tag)) return countNotModified();
          okJson(ctx, withReceipt(read));
        },
      };
    },
  },
  {
    spec: actionAck,
    handling: ({ stores, guards, actionEvents: events }) => {
      const store = stores.actions;
      // A session token binds the ack to its side: a record to the other side is refused, nothing recorded.
      const ack = (params: Record<string, string>, side: Side | undefined) => {
        const { wkIdentity, id } = parseAckParams({ ...params });
        return acknowledge(store, events, 'http', wkIdentity, id, side);
      };
      return {
        guards: [
          // The path first (400), then the credential (401, counted as an unauthorized ack).
          async (ctx, next) => {
            parseAckParams({ ...ctx.params });
            try {
              await next();
            } catch (err) {
              if (err instanceof AppError && err.status === 401) ackMetrics.counted('http', 'unauthorized');
              throw err;
            }
          },
          // A byte-identical resend is answered as the first ack was: the same receipt.
          guards.signed(actionAck.signedAs, async (_body, _id, params) => {
            const result = await ack(params, undefined);
            return typeof result === 'string' ? null : ackAnswer(result);
          }),
        ],
        handler: async (ctx) => {
          ctx.state.writing = true;
          const result = await ack(ctx.params, ctx.state.tokenSide);
          if (typeof result === 'string') {
            // Nothing was written: the credential's nonce is given back.
            ctx.state.writing = false;
            if (result === 'other_side') throw bindingRefusal('ack', ctx.state.log);
            throw new AppError('NOT_FOUND', NO_RECORD);
          }
          okJson(ctx, ackAnswer(result));
        },
      };
    },
  },
];
