import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { JobType, Queue, Worker } from 'bullmq';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { CoreConfig } from './config/config.js';
import { listen } from './http/listen.js';
import { errorFields, type Logger } from './log.js';
import type { RoleHandle } from './role.js';
import { RELAY_VERSION } from './version.js';

/**
 * The relay's own registry rather than prom-client's global one, so a library registering metrics of its own
 * can neither clash with ours nor leak into the scrape. One per process: API and worker share it in `all`.
 */
export const registry = new Registry();
collectDefaultMetrics({ register: registry });

const buildInfo = new Gauge({
  name: 'relay_build_info',
  help: "Always 1; its labels say which version (package.json) and commit (RELAY_COMMIT, else the git checkout's HEAD) this process runs.",
  labelNames: ['version', 'commit'] as const,
  registers: [registry],
});

const httpRequests = new Counter({
  name: 'relay_http_requests_total',
  help: 'HTTP requests answered by the API, by method, route template and status.',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [registry],
});

const httpDuration = new Histogram({
  name: 'relay_http_request_duration_seconds',
  help: 'Time from request to response, by method, route template and status.',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

/** Requests waiting for one of their client address's HTTP_ANSWERS_PER_IP slots (src/core/limits/ip-concurrency.ts). */
export const answersWaiting = new Gauge({
  name: 'relay_http_answers_waiting',
  help: "Requests waiting for one of their client address's HTTP_ANSWERS_PER_IP slots.",
  registers: [registry],
});

const rateLimited = new Counter({
  name: 'relay_rate_limit_rejections_total',
  help: 'Requests rejected with 429, by limiter (api: the global /v1 limit; others: per-endpoint budgets).',
  labelNames: ['limiter'] as const,
  registers: [registry],
});

const redisUnavailable = new Counter({
  name: 'relay_redis_unavailable_total',
  help: 'Requests answered 503 because Redis could not serve them.',
  registers: [registry],
});

const redisClientErrors = new Counter({
  name: 'relay_redis_client_errors_total',
  help: "Redis clients' error events (failed connects, dropped connections), by client role.",
  labelNames: ['client'] as const,
  registers: [registry],
});

const redisLivenessFailures = new Counter({
  name: 'relay_redis_liveness_failures_total',
  help: 'Long-lived Redis connections that did not answer a liveness PING in time and were replaced, by client.',
  labelNames: ['client'] as const,
  registers: [registry],
});

const jobOutcomes = new Counter({
  name: 'relay_jobs_total',
  help: 'Finished job attempts by queue and outcome (completed; retried: failed, will run again; failed: final).',
  labelNames: ['queue', 'outcome'] as const,
  registers: [registry],
});

const QUEUE_STATES: JobType[] = [
  'waiting',
  'prioritized',
  'active',
  'delayed',
  'paused',
  'failed',
  'completed',
];
/** A scrape must answer even while Redis is down; a queue whose counts are late is left out of that scrape. */
const QUEUE_COUNT_TIMEOUT_MS = 1000;
const watchedQueues = new Set<Queue>();

new Gauge({
  name: 'relay_queue_jobs',
  help: 'Jobs per queue and state, read from Redis at scrape time.',
  labelNames: ['queue', 'state'] as const,
  registers: [registry],
  async collect() {
    const counted = await Promise.all([...watchedQueues].map((queue) => countJobs(queue)));
    this.reset();
    for (const [queue, counts] of counted) {
      for (const [state, count] of Object.entries(counts)) this.set({ queue, state }, count);
    }
  },
});

async function countJobs(queue: Queue): Promise<[string, Record<string, number>]> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<Record<string, number>>((resolve) => {
    timer = setTimeout(() => resolve({}), QUEUE_COUNT_TIMEOUT_MS);
  });
  const counts = queue.getJobCounts(...QUEUE_STATES).catch(() => ({}));
  try {
    return [queue.name, await Promise.race([counts, late])];
  } finally {
    clearTimeout(timer);
  }
}

type RequestSeries = { count: () => void; duration: (seconds: number) => void };
/**
 * Per method, route template and status, the series' bound children, made once: labelling costs a validation
 * and an object per request otherwise. Bounded: Node's parser accepts a fixed set of methods, routes are
 * templates, statuses few.
 */
const requestSeries = new Map<string, RequestSeries>();

/** Counts and times one answered request by route template (never the raw path, which holds ids). */
export function recordHttpRequest(method: string, route: string, status: number, seconds: number): void {
  const id = `${method} ${route} ${status}`;
  let series = requestSeries.get(id);
  if (!series) {
    const labels = { method, route, status: String(status) };
    const count = httpRequests.labels(labels);
    const duration = httpDuration.labels(labels);
    series = { count: () => count.inc(), duration: (value) => duration.observe(value) };
    requestSeries.set(id, series);
  }
  series.count();
  series.duration(seconds);
}

export function recordRateLimited(limiter: string): void {
  rateLimited.inc({ limiter });
}

export function recordRedisUnavailable(): void {
  redisUnavailable.inc();
}

export function recordRedisClientError(client: string): void {
  redisClientErrors.inc({ client });
}

export function recordRedisLivenessFailure(client: string): void {
  redisLivenessFailures.inc({ client });
}

/** Counts a BullMQ worker's job outcomes; call once per Worker the worker role creates. */
export function instrumentWorker(worker: Worker): void {
  worker.on('completed', () => jobOutcomes.inc({ queue: worker.name, outcome: 'completed' }));
  // BullMQ sets finishedOn only when it moves the job to the failed set; an attempt that will run again has none.
  worker.on('failed', (job) => {
    const outcome = job && job.finishedOn === undefined ? 'retried' : 'failed';
    jobOutcomes.inc({ queue: worker.name, outcome });
  });
}

/** Reports these queues' job counts on every scrape; returns the function that stops reporting them. */
export function watchQueueDepth(queues: Queue[]): () => void {
  for (const queue of queues) watchedQueues.add(queue);
  return () => {
    for (const queue of queues) watchedQueues.delete(queue);
  };
}

export interface MetricsHandle extends RoleHandle {
  /** `http://host:port` of the listener. */
  readonly url: string;
}

const HEALTHY = JSON.stringify({ success: true, data: { status: 'ok' } });

async function answer(req: IncomingMessage, res: ServerResponse, log: Logger): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { Allow: 'GET, HEAD' }).end();
  } else if (path === '/metrics') {
    try {
      const text = await registry.metrics();
      res.writeHead(200, { 'Content-Type': registry.contentType }).end(text);
    } catch (err) {
      log.error('metrics collection failed', errorFields(err));
      res.writeHead(500).end();
    }
  } else if (path === '/healthz') {
    // Liveness for roles without the API (the worker): the process answers, nothing else is checked.
    res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8' }).end(HEALTHY);
  } else {
    res.writeHead(404).end();
  }
}

/**
 * `GET /metrics` (Prometheus text format) and `GET /healthz` on their own port, so scrapes never pass through
 * the public load balancer or count against the rate limit. Returns undefined when METRICS_PORT is 0.
 */
export async function startMetricsServer(
  config: CoreConfig,
  log: Logger,
): Promise<MetricsHandle | undefined> {
  if (config.metricsPort === 0) return undefined;
  buildInfo.reset();
  buildInfo.set({ version: RELAY_VERSION, commit: config.commit }, 1);
  const server = createServer((req, res) => void answer(req, res, log));
  server.requestTimeout = 10_000;
  // Announced by main once every listener is up: a busy port must fail before anything says "listening".
  const url = await listen(server, config.metricsPort, config.host, 'METRICS_PORT', log);
  return {
    url,
    async stop() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}
