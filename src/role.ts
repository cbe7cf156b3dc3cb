/** What main.ts starts for each RELAY_ROLE and stops on SIGTERM. */
export interface RoleHandle {
  stop(): Promise<void>;
}
