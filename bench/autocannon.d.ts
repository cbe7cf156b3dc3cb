// The part of autocannon's programmatic API the benchmark uses (the package ships no types).
declare module 'autocannon' {
  export interface Histogram {
    average: number;
    min: number;
    max: number;
    stddev: number;
    p50: number;
    p90: number;
    p99: number;
    p99_9: number;
  }

  export interface Options {
    url: string;
    connections?: number;
    duration?: number;
    method?: 'GET' | 'POST';
    headers?: Record<string, string>;
    body?: string | Buffer;
    /** Stop after this many requests instead of after `duration`. */
    amount?: number;
    /** Per-request hooks: `setupRequest` may replace the body of each request sent. */
    requests?: {
      method?: 'GET' | 'POST';
      headers?: Record<string, string>;
      setupRequest?: (request: { body?: string | Buffer }) => { body?: string | Buffer };
    }[];
  }

  export interface Result {
    url: string;
    duration: number;
    requests: Histogram & { total: number };
    latency: Histogram;
    throughput: Histogram;
    errors: number;
    timeouts: number;
    non2xx: number;
    statusCodeStats: Record<string, { count: number }>;
  }

  export default function autocannon(options: Options): Promise<Result>;
}
