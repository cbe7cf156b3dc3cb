/** What main.ts starts for each RELAY_ROLE and stops on SIGTERM. */
export interface RoleHandle {
  stop(): Promise<void>;
}

/** After a worker's grace period its active jobs are aborted; this long is left for releasing them. */
export const RELEASE_MS = 2000;

/**
 * True when `work` settles within `ms`, false otherwise (the work is left running). Shutdown steps that talk to
 * Redis use it: with Redis gone they would otherwise wait for a reconnect that may never come.
 */
export async function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  const settled = work.then(
    () => true as const,
    () => true as const,
  );
  try {
    return await Promise.race([settled, late]);
  } finally {
    clearTimeout(timer);
  }
}
