import { randomUUID } from 'node:crypto';

const SANE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** A sane incoming X-Request-Id, else a new one. */
export function requestIdFrom(incoming: string | string[] | undefined): string {
  return typeof incoming === 'string' && SANE_ID.test(incoming) ? incoming : randomUUID();
}
