import { checkContract } from './contract.js';

/** One request the client made, and the status it got. */
export interface Sent {
  method: string;
  path: string;
  authorization: string | null;
  ifNoneMatch: string | null;
  body: string | undefined;
  status: number;
  requestId: string | null;
}

/**
 * A fetch for the client library whose every response is checked against the OpenAPI document of the relay at
 * `base`, as the other tests' are, and recorded in `sent`.
 */
export function checkedFetch(base: string, sent: Sent[] = []): typeof fetch {
  return async (input, init) => {
    const res = await fetch(input, init);
    const path = new URL(input as string).pathname;
    const text = await res.clone().text();
    const body = typeof init?.body === 'string' ? init.body : undefined;
    checkContract(base, {
      method: init?.method ?? 'GET',
      target: path,
      status: res.status,
      headers: res.headers,
      text,
    });
    sent.push({
      method: init?.method ?? 'GET',
      path,
      authorization: new Headers(init?.headers).get('authorization'),
      ifNoneMatch: new Headers(init?.headers).get('if-none-match'),
      body,
      status: res.status,
      requestId: res.headers.get('x-request-id'),
    });
    return res;
  };
}
