import { BUILT_IN_ACTION_TYPES } from '../action-types/index.js';
import { SIDES, type Side } from '../core/sides.js';
import type { ApiProfile } from '../core/config/config.js';
import { ERROR_CODES } from '../core/errors.js';
import { RELAY_VERSION } from '../core/version.js';
import { credentialProperties } from '../identity/index.js';
import { joinEvent as joinData, roomEvent } from '../realtime/index.js';
import { ackParams, streamEpoch } from '../mailbox/index.js';
import { documentedActionRecord } from './document.js';
import { deliveredEvent, sidePresence } from './responses-schema.js';

/**
 * The AsyncAPI 3.0 description of the socket.io events, built from the same tables and schemas as the code:
 * the action-type table decides which event goes to which path, and the record schema is the OpenAPI
 * documents' ActionRecord (with the expireAt that API_PROFILE=ssp-apps adds). `npm run asyncapi` writes it to docs/asyncapi.yaml; a test checks the file is current.
 */

const WK_IDENTITY = 'bc1qs3s3lx8drrf85sk0gq76uqcfx5w44xjfmpmj0emzr9zk5pw0xzyq6kd8lq';

/** What the app on each path is, and what it hears. */
const PATHS: Record<Side, { channel: string; app: string; description: string }> = {
  key: {
    channel: 'keyApp',
    app: 'the key app',
    description:
      "Requests to the key app. Replay of a join without since: when a socket joins while the pair's mailbox holds a request to the key " +
      'that has not expired, that socket alone gets it at once, so a key app coming back to the foreground sees ' +
      'the request it missed. One connection never gets the same record twice (a second join, or a live event ' +
      "and then a join); a new connection (after a reconnect) gets it again. If a pod's Redis subscription was " +
      "interrupted, the pod replays the pair's current request to its key sockets once it is back.",
  },
  wallet: {
    channel: 'walletApp',
    app: 'the wallet app',
    description:
      'Replies to the wallet app. A join without since has no replay: after a reconnect such a wallet reads ' +
      'GET /v1/action/{wkIdentity}. A join with since replays on this path too.',
  },
};

const DELIVERY =
  "Every acknowledged POST /v1/action of an emitted type reaches every socket that was in the pair's room when " +
  'it was acknowledged, on every pod, once per connection, even when a later POST has already replaced it in the ' +
  'mailbox (two requests a millisecond apart are two events, in order). The data is the stored record, exactly ' +
  'the data the POST answered, without the envelope; under API_PROFILE=ssp-apps the record also carries expireAt, ' +
  'the same value as expiresAt. A socket that joined with since gets the records of its direction in offset ' +
  'order, each once; a replay sends them as stored, without delivered. Action types the relay does not know are stored and ' +
  "readable through GET, never emitted. The two paths never see each other's events.";

/** An example record per event, as the app on the other side would receive it. */
function example(action: string, side: Side) {
  const request = side === 'key';
  return {
    name: action,
    payload: {
      id: EXAMPLE_ID,
      chain: 'btc',
      wkIdentity: WK_IDENTITY,
      action,
      payload: action === 'tx' ? '0200000001' : request ? '{"request":"…"}' : 'ab12',
      ...(action === 'tx'
        ? { path: '0-0', utxos: [{ txid: 'ab'.repeat(32), vout: 1, satoshis: '150000' }] }
        : {}),
      createdAt: '2026-11-23T12:00:00.000Z',
      expiresAt: '2026-11-23T12:15:00.000Z',
      epoch: 'k3Yq0Zr2TmWb9xPe',
      offset: 7,
    },
  };
}

interface RecordSchema {
  properties: Record<string, object>;
  required: string[];
}

const recordOf = (profile: ApiProfile) => documentedActionRecord(profile) as RecordSchema;

/** The ActionRecord of both profiles: expireAt is there only under API_PROFILE=ssp-apps, so not required. */
function actionRecord(): RecordSchema {
  const standard = recordOf('standard');
  const { expireAt } = recordOf('ssp-apps').properties;
  return {
    ...standard,
    properties: {
      ...standard.properties,
      expireAt: { ...expireAt, description: 'only under API_PROFILE=ssp-apps: the same as expiresAt' },
    },
  };
}

const roomMessage = (name: 'join' | 'leave', summary: string, payload: string) => ({
  name,
  title: name,
  summary,
  payload: { $ref: `#/components/schemas/${payload}` },
  examples: [{ name, payload: { wkIdentity: WK_IDENTITY } }],
});

/**
 * A join: the room, and the credential it may carry: the identity signature
 * (docs/api.md#identity-signed-requests) or a session token (docs/api.md#sessions).
 */
const joinEvent = {
  ...joinData,
  description:
    'the identity signature travels in the same object: signature, message (signed for the purpose "join"), ' +
    'publicKey, witnessScript; required where AUTH_MODE / AUTH_ROUTES make joins required. Or, instead of ' +
    "those, a session token of the pair for this path's side in `token`; under AUTH_READS=required a join " +
    'needs one of the two',
  properties: {
    ...joinData.properties,
    ...credentialProperties,
    token: {
      type: 'string',
      maxLength: 1024,
      description:
        'a session token (POST /v1/session) of this pair, for the side of this path; refused (AUTH_INVALID, ' +
        'AUTH_EXPIRED) beside the signature fields or when it does not fit',
    },
  },
};

/** socket.io's acknowledgement of a join sent with a callback (docs/api.md#join-and-leave). */
const joinAnswer = {
  type: 'object',
  description:
    '{ ok: true, epoch, offset, peer } once joined; a join with since also gets recovered and replayed, after ' +
    'the replayed events (docs/api.md#resuming-the-stream); { ok: false, code } with the code HTTP would give, ' +
    'then the disconnect',
  properties: {
    ok: { type: 'boolean' },
    code: { type: 'string', enum: ERROR_CODES },
    recovered: {
      type: 'boolean',
      description: 'every record after since is among those replayed and live ones to come',
    },
    epoch: { anyOf: [streamEpoch, { type: 'null' }], description: "the direction's current epoch" },
    offset: { type: 'integer', minimum: 0, description: "the direction's last offset (0: none)" },
    replayed: { type: 'integer', minimum: 0, description: 'records this join sent' },
    peer: { ...sidePresence, description: "the other side's presence (docs/api.md#presence)" },
  },
  required: ['ok'],
  additionalProperties: false,
};

/** socket.io's acknowledgement of an ack (docs/api.md#acks-and-receipts). */
const ackAnswer = {
  type: 'object',
  description:
    '{ ok: true, delivered } with the first receipt of the record (a repeat answers the same); { ok: false, code }: ' +
    'INVALID_PARAMETER, AUTH_REQUIRED, NOT_FOUND, RATE_LIMITED or UNAVAILABLE. Never a disconnect.',
  properties: {
    ok: { type: 'boolean' },
    code: {
      type: 'string',
      enum: ['INVALID_PARAMETER', 'AUTH_REQUIRED', 'NOT_FOUND', 'RATE_LIMITED', 'UNAVAILABLE'],
    },
    delivered: {
      type: 'object',
      properties: { side: { type: 'string', enum: SIDES }, at: { type: 'string', format: 'date-time' } },
      required: ['side', 'at'],
      additionalProperties: false,
    },
  },
  required: ['ok'],
  additionalProperties: false,
};

const EXAMPLE_ID = 'hPe2s2ZXvR5jIS-RXEltFw';
const EXAMPLE_AT = '2026-11-23T12:00:01.250Z';

/** The `presence` event (docs/api.md#presence). */
const presenceChange = {
  type: 'object',
  properties: {
    wkIdentity: roomEvent.properties.wkIdentity,
    side: { type: 'string', enum: SIDES, description: 'the side that went connected or not connected' },
    ...sidePresence.properties,
  },
  required: ['wkIdentity', 'side', ...sidePresence.required],
  additionalProperties: false,
};

const PEER = { connected: true, lastSeen: '2026-11-23T12:00:03.120Z' };

export function buildAsyncApi(): Record<string, unknown> {
  const messages: Record<string, unknown> = {
    join: roomMessage(
      'join',
      "Puts the socket in the pair's room on this path. A bad or missing wkIdentity, a join over the per-IP " +
        'budget or past SOCKET_ROOMS_MAX rooms, or one the identity check refuses (it may carry signature, ' +
        'message, publicKey, witnessScript: docs/api.md#identity-signed-requests) disconnects the socket (io ' +
        'server disconnect). A join that Redis cannot answer closes only the transport: the client reconnects ' +
        'and joins again. Joins and leaves take effect in the order sent. With since (the epoch and offset of ' +
        'the last record the client has) the socket first gets the records after it, in offset order, then the ' +
        'live ones without gap or repeat; a bad since is a bad join. Sent with an acknowledgement callback, ' +
        'the join is answered (joinAnswer) before any disconnect.',
      'JoinEvent',
    ),
    leave: roomMessage(
      'leave',
      "Takes the socket out of the pair's room; a bad leave is ignored.",
      'RoomEvent',
    ),
    joinAnswer: {
      name: 'joinAnswer',
      title: 'join acknowledgement',
      summary: "The relay's answer to a join sent with socket.io's acknowledgement callback.",
      payload: { $ref: '#/components/schemas/JoinAnswer' },
      examples: [
        { name: 'joined', payload: { ok: true, epoch: 'k3Yq0Zr2TmWb9xPe', offset: 7, peer: PEER } },
        {
          name: 'resumed',
          payload: {
            ok: true,
            recovered: true,
            epoch: 'k3Yq0Zr2TmWb9xPe',
            offset: 7,
            replayed: 2,
            peer: PEER,
          },
        },
        { name: 'refused', payload: { ok: false, code: 'AUTH_REQUIRED' } },
      ],
    },
    ack: {
      name: 'ack',
      title: 'ack',
      summary:
        "The app of a record's target side received it (docs/api.md#acks-and-receipts): sent on that side's path " +
        "by a socket joined to the pair's room and authenticated for the side (its join signed, or AUTH_ROUTES " +
        'ack=off). The first ack stores the receipt; a repeat answers it again. One point of the per-IP join ' +
        'budget each. A refusal records nothing and never disconnects.',
      payload: { $ref: '#/components/schemas/AckEvent' },
      examples: [{ name: 'ack', payload: { wkIdentity: WK_IDENTITY, id: EXAMPLE_ID } }],
    },
    ackAnswer: {
      name: 'ackAnswer',
      title: 'ack acknowledgement',
      summary: "The relay's answer to an ack sent with socket.io's acknowledgement callback.",
      payload: { $ref: '#/components/schemas/AckAnswer' },
      examples: [
        { name: 'acknowledged', payload: { ok: true, delivered: { side: 'key', at: EXAMPLE_AT } } },
        { name: 'refused', payload: { ok: false, code: 'NOT_FOUND' } },
      ],
    },
    delivered: {
      name: 'delivered',
      title: 'delivered',
      summary:
        "A record this side sent was acknowledged by the other side's app (its first ack, by socket or HTTP, on " +
        "any pod): sent to the stream sockets (joined with since) of the pair's room on the sender's path, once " +
        'per connection; plain sockets never get it.',
      payload: { $ref: '#/components/schemas/DeliveredEvent' },
      examples: [
        {
          name: 'delivered',
          payload: {
            wkIdentity: WK_IDENTITY,
            id: EXAMPLE_ID,
            action: 'tx',
            epoch: 'k3Yq0Zr2TmWb9xPe',
            offset: 7,
            side: 'key',
            at: EXAMPLE_AT,
          },
        },
      ],
    },
    presence: {
      name: 'presence',
      title: 'presence',
      summary:
        'The other side of the pair went connected (its first socket joined, on any pod) or not connected (its ' +
        'last one left, or the pod holding it was found dead). Sent only to sockets that joined with since, once ' +
        'per transition; plain sockets never get it.',
      payload: { $ref: '#/components/schemas/PresenceChange' },
      examples: [
        {
          name: 'presence',
          payload: {
            wkIdentity: WK_IDENTITY,
            side: 'key',
            connected: false,
            lastSeen: '2026-11-23T12:04:10.250Z',
          },
        },
      ],
    },
  };
  const channels: Record<string, unknown> = {};
  const operations: Record<string, unknown> = {};
  for (const side of SIDES) {
    const { channel, app, description } = PATHS[side];
    // The built-in rows: ACTION_TYPES_EXTRA is a deployment's own.
    const events = Object.entries(BUILT_IN_ACTION_TYPES).filter(([, rule]) => rule.side === side);
    for (const [action, rule] of events) {
      messages[action] = {
        name: action,
        title: rule.push?.title ?? action,
        summary: `Emitted to ${app} after POST /v1/action stored an action of type ${action}.`,
        payload: { $ref: '#/components/schemas/ActionRecord' },
        examples: [example(action, side)],
      };
    }
    channels[channel] = {
      address: `/v1/socket/${side}`,
      title: `socket.io path /v1/socket/${side}`,
      description: `${description} ${DELIVERY}`,
      messages: Object.fromEntries(
        [
          'join',
          'joinAnswer',
          'leave',
          'presence',
          'ack',
          'ackAnswer',
          'delivered',
          ...events.map(([action]) => action),
        ].map((name) => [name, { $ref: `#/components/messages/${name}` }]),
      ),
    };
    for (const verb of ['join', 'leave'] as const) {
      operations[`${verb}${side === 'key' ? 'Key' : 'Wallet'}`] = {
        action: 'send',
        channel: { $ref: `#/channels/${channel}` },
        summary: `${app} ${verb}s the pair's room`,
        messages: [{ $ref: `#/channels/${channel}/messages/${verb}` }],
        ...(verb === 'join'
          ? {
              reply: {
                channel: { $ref: `#/channels/${channel}` },
                messages: [{ $ref: `#/channels/${channel}/messages/joinAnswer` }],
              },
            }
          : {}),
      };
    }
    operations[`ack${side === 'key' ? 'Key' : 'Wallet'}`] = {
      action: 'send',
      channel: { $ref: `#/channels/${channel}` },
      summary: `${app} acknowledges a record sent to it`,
      messages: [{ $ref: `#/channels/${channel}/messages/ack` }],
      reply: {
        channel: { $ref: `#/channels/${channel}` },
        messages: [{ $ref: `#/channels/${channel}/messages/ackAnswer` }],
      },
    };
    operations[`receive${side === 'key' ? 'Key' : 'Wallet'}Events`] = {
      action: 'receive',
      channel: { $ref: `#/channels/${channel}` },
      summary: `what ${app} receives`,
      messages: [...events.map(([action]) => action), 'presence', 'delivered'].map((name) => ({
        $ref: `#/channels/${channel}/messages/${name}`,
      })),
    };
  }
  return {
    asyncapi: '3.0.0',
    info: {
      title: 'multisig-relay events',
      version: RELAY_VERSION,
      description:
        'socket.io 4 (Engine.IO protocol 4) on the API\'s port, default namespace "/", HTTP long-polling first, ' +
        'then the WebSocket upgrade; no auth, query or extra headers. Each path is the socket.io `path` option of ' +
        'the client. Packets up to 100 KB, ping interval 25 s, timeout 20 s, SOCKETS_PER_IP open sockets per ' +
        'client IP on a pod. The human contract is docs/api.md#real-time-events. A relay serves this document ' +
        'at GET /v1/asyncapi.json; docs/asyncapi.yaml is the same, written by `npm run asyncapi` ' +
        '(src/contract/asyncapi.ts).',
    },
    defaultContentType: 'application/json',
    servers: {
      relay: {
        host: 'relay.example.com',
        protocol: 'wss',
        description: "socket.io over WebSocket (or HTTP long-polling) on the relay's HTTP port",
      },
    },
    channels,
    operations,
    components: {
      schemas: {
        RoomEvent: roomEvent,
        JoinEvent: joinEvent,
        JoinAnswer: joinAnswer,
        AckEvent: ackParams,
        AckAnswer: ackAnswer,
        DeliveredEvent: deliveredEvent,
        PresenceChange: presenceChange,
        ActionRecord: actionRecord(),
      },
      messages,
    },
  };
}
