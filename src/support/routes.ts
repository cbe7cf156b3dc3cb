import type Router from '@koa/router';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { SUPPORT_BODY_LIMIT } from '../core/http/body.js';
import { ok, type RelayContext, type RelayState } from '../core/http/context.js';
import { mount, type RouteSpec } from '../core/http/route-spec.js';
import { ipBucket } from '../core/http/client-ip.js';
import { consumeOrReject } from '../core/limits/rate-limit.js';
import { validator } from '../core/validation/validate.js';
import type { SupportProducer } from './producer.js';
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

/**
 * Both forms become one job each. The submission budget is spent only by valid forms (a typo does not cost
 * the sender one of their daily submissions) that are not repeats of one already queued, and given back when
 * the job could not be queued.
 */
export function supportRoutes(
  router: Router<RelayState>,
  producer: SupportProducer,
  submissions: RateLimiterAbstract,
): void {
  const enqueue = async (ctx: RelayContext, job: SupportJob) => {
    const id = await producer.submit(
      job,
      () => consumeOrReject(submissions, ctx, 'submissions from this address'),
      // Not queued, so not counted: the sender will have to submit again.
      () => submissions.reward(ipBucket(ctx.ip)).then(() => undefined),
    );
    ctx.state.log.info('support job queued', { jobId: id, kind: job.kind });
    ok(ctx, { id, status: 'queued' });
  };

  mount(router, ticketRoute, async (ctx) => {
    const form = parseTicket(ctx.request.body);
    await enqueue(ctx, {
      kind: 'ticket',
      subject: normalizeText(form.subject),
      description: normalizeText(form.description),
      type: ticketType(normalizeText(form.type)),
      email: form.email.toLowerCase(),
    });
  });

  mount(router, contactRoute, async (ctx) => {
    const form = parseContact(ctx.request.body);
    await enqueue(ctx, {
      kind: 'contact',
      name: normalizeText(form.name),
      email: form.email.toLowerCase(),
      message: normalizeText(form.message),
    });
  });
}
