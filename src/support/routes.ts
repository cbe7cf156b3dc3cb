import type { CoreConfig } from '../core/config/config.js';
import type { SupportConfig } from './variables.js';
import { ok, type RelayContext } from '../core/http/context.js';
import type { MountedRoute } from '../core/feature.js';
import type { RouteSpec } from '../core/http/route-spec.js';
import type { LimiterFactory } from '../core/limits/limiters.js';
import type { Logger } from '../core/log.js';
import type { Keys } from '../core/redis/keys.js';
import type { RedisClient } from '../core/redis/clients.js';
import type { WriteAck } from '../core/redis/write-ack.js';
import { ipBucket } from '../core/http/client-ip.js';
import { consumeOrReject } from '../core/limits/rate-limit.js';
import { validator } from '../core/validation/validate.js';
import { SupportProducer } from './producer.js';
import { normalizeText, ticketType, type SupportJob } from './jobs.js';
import { contactBody, ticketBody } from './schema.js';

interface TicketForm {
  subject: string;
  description: string;
  type: string;
  email: string;
}

interface ContactForm {
  name: string;
  email: string;
  message: string;
}

const parseTicket = validator<TicketForm>('body', ticketBody);
const parseContact = validator<ContactForm>('body', contactBody);

/**
 * Support forms allow 50,000 characters (docs/api.md#support-forms--post-v1ticket-post-v1contact); in UTF-8 that
 * is up to 200 KB, so 64 KB would refuse them.
 */
const SUPPORT_BODY_LIMIT = 256 * 1024;

/** A form queued for the helpdesk: both are documented in one section and answer alike. */
function formRoute(path: string, summary: string, body: { component: string; schema: object }): RouteSpec {
  return {
    method: 'post',
    path,
    summary,
    doc: 'support-forms--post-v1ticket-post-v1contact',
    body: { ...body, limitBytes: SUPPORT_BODY_LIMIT },
    data: 'Queued',
    errors: ['UNAVAILABLE'],
  };
}

export const ticketRoute = formRoute('/v1/ticket', 'A support ticket, queued for the helpdesk', {
  component: 'TicketRequest',
  schema: ticketBody,
});

export const contactRoute = formRoute('/v1/contact', 'A contact form, queued for the helpdesk', {
  component: 'ContactRequest',
  schema: contactBody,
});

/** What the forms use of the app: the queue's own fail-fast client, as a job is acknowledged only once Redis has it. */
export interface SupportDeps {
  config: CoreConfig & { support: SupportConfig };
  log: Logger;
  redis: { queue: RedisClient };
  keys: Keys;
  ack: WriteAck;
  limiter: LimiterFactory;
}

/** One producer per app, shared by both forms. */
const producers = new WeakMap<SupportDeps, SupportProducer>();

/**
 * Both forms become one job each. The submission budget is spent only by valid forms (a typo does not cost
 * the sender one of their daily submissions) that are not repeats of one already queued, and given back when
 * the job could not be queued.
 */
function enqueuer(deps: SupportDeps): (ctx: RelayContext, job: SupportJob) => Promise<void> {
  const { config } = deps;
  let producer = producers.get(deps);
  if (producer === undefined) {
    producer = new SupportProducer(
      deps.redis.queue,
      config.keyPrefix,
      deps.keys,
      config.support.delivery,
      deps.log,
      deps.ack,
    );
    producers.set(deps, producer);
  }
  const submissions = deps.limiter('submissions', config.support.submissionsPerDay, 86_400);
  return async (ctx, job) => {
    const id = await producer.submit(
      job,
      () => consumeOrReject(submissions, ctx, 'submissions from this address'),
      // Not queued, so not counted: the sender will have to submit again.
      () => submissions.reward(ipBucket(ctx.ip)).then(() => undefined),
    );
    ctx.state.log.info('support job queued', { jobId: id, kind: job.kind });
    ok(ctx, { id, status: 'queued' });
  };
}

/** A form's endpoint: its body becomes one job. */
function form(spec: RouteSpec, toJob: (body: unknown) => SupportJob): MountedRoute<SupportDeps> {
  return {
    spec,
    handling: (deps) => {
      const enqueue = enqueuer(deps);
      return { handler: (ctx) => enqueue(ctx, toJob(ctx.request.body)) };
    },
  };
}

export const supportForms: MountedRoute<SupportDeps>[] = [
  form(ticketRoute, (body) => {
    const ticket = parseTicket(body);
    return {
      kind: 'ticket',
      subject: normalizeText(ticket.subject),
      description: normalizeText(ticket.description),
      type: ticketType(normalizeText(ticket.type)),
      email: ticket.email.toLowerCase(),
    };
  }),
  form(contactRoute, (body) => {
    const contact = parseContact(body);
    return {
      kind: 'contact',
      name: normalizeText(contact.name),
      email: contact.email.toLowerCase(),
      message: normalizeText(contact.message),
    };
  }),
];
