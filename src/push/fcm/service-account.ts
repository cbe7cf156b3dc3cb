import { createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ConfigError } from '../../core/config/errors.js';
import type { PushConfig } from '../variables.js';

/** The fields of a Google service-account JSON key that FCM HTTP v1 needs. */
export interface ServiceAccount {
  projectId: string;
  clientEmail: string;
  /** PEM; checked to parse as a private key at start-up. */
  privateKey: string;
  tokenUri: string;
}

export type PushSettings = PushConfig & {
  /** Read and checked at start-up of a role that sends pushes (worker, all); absent with `log` and on API pods. */
  serviceAccount: ServiceAccount | undefined;
};

const SERVICE_ACCOUNT_VAR = 'FCM_SERVICE_ACCOUNT_FILE';

/** A Google service-account key file, or a ConfigError naming FCM_SERVICE_ACCOUNT_FILE (never its contents). */
export function readServiceAccount(file: string): ServiceAccount {
  const bad = (why: string) => new ConfigError(`${SERVICE_ACCOUNT_VAR} ${file} ${why}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw bad(
      err instanceof SyntaxError ? 'is not JSON' : `cannot be read (${(err as NodeJS.ErrnoException).code})`,
    );
  }
  const fields = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<string, unknown>;
  if (fields.type !== 'service_account')
    throw bad('is not a service-account key ("type" is not "service_account")');
  for (const name of ['project_id', 'client_email', 'private_key', 'token_uri']) {
    if (typeof fields[name] !== 'string' || fields[name] === '') throw bad(`has no "${name}"`);
  }
  const account = {
    projectId: fields.project_id as string,
    clientEmail: fields.client_email as string,
    privateKey: fields.private_key as string,
    tokenUri: fields.token_uri as string,
  };
  try {
    createPrivateKey(account.privateKey);
  } catch {
    throw bad('has a "private_key" that is not a PEM private key');
  }
  if (!/^https?:\/\//.test(account.tokenUri)) throw bad('has a "token_uri" that is not an http(s) URL');
  return account;
}
