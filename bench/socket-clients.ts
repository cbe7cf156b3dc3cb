/**
 * The benchmark's side of bench/socket-client-process.ts: socket.io clients spread over child processes of at
 * most PER_PROCESS sockets each (this machine allows a process 20,000 open files).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync } from 'node:fs';
import { join } from 'node:path';
import { cpuMsOf, OUT_DIR, ROOT } from './children.js';

export type ClientCommand =
  | {
      type: 'connect';
      url: string;
      side: 'key' | 'wallet';
      /** Socket i joins the pair `${prefix}-${i}`. */
      prefix: string;
      count: number;
      /** Sockets connecting or waiting for their join's acknowledgement at a time. */
      inFlight: number;
    }
  | { type: 'close' };

export type ClientReply =
  { type: 'joined'; count: number; refused: number; ms99: number; msAll: number } | { type: 'closed' };

export const PER_PROCESS = 4750;

export interface Joined {
  count: number;
  refused: number;
  /** The slowest process's time from the command until 99 % (all) of its sockets had joined, ms. */
  ms99: number;
  msAll: number;
}

/** `processes` children holding sockets; started once, used for any number of connect/close rounds. */
export class SocketClients {
  private constructor(private readonly children: ChildProcess[]) {}

  /** `nodeArgs(source)`: the node arguments that run a bench source file (children.ts entryArgs). */
  static start(name: string, processes: number, nodeArgs: (source: string) => string[]): SocketClients {
    const children = Array.from({ length: processes }, (_, i) => {
      const log = openSync(join(OUT_DIR, `${name}-${i}.log`), 'w');
      const child = spawn(process.execPath, nodeArgs('bench/socket-client-process.ts'), {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
        stdio: ['ignore', log, log, 'ipc'],
      });
      process.once('exit', () => child.kill('SIGKILL'));
      return child;
    });
    return new SocketClients(children);
  }

  /** Processes needed for `sockets`. */
  static processesFor(sockets: number): number {
    return Math.max(1, Math.ceil(sockets / PER_PROCESS));
  }

  /** Opens `count` sockets spread evenly over the processes, each joined to its own pair. */
  async connect(
    command: Omit<Extract<ClientCommand, { type: 'connect' }>, 'type' | 'count' | 'inFlight'>,
    count: number,
    inFlight: number,
  ): Promise<Joined> {
    const n = this.children.length;
    const replies = await Promise.all(
      this.children.map((child, i) => {
        const share = Math.floor(count / n) + (i < count % n ? 1 : 0);
        return this.ask(child, {
          type: 'connect',
          ...command,
          prefix: `${command.prefix}-${i}`,
          count: share,
          inFlight: Math.ceil(inFlight / n),
        });
      }),
    );
    const joined = replies as Extract<ClientReply, { type: 'joined' }>[];
    return {
      count: joined.reduce((sum, r) => sum + r.count, 0),
      refused: joined.reduce((sum, r) => sum + r.refused, 0),
      ms99: Math.max(...joined.map((r) => r.ms99)),
      msAll: Math.max(...joined.map((r) => r.msAll)),
    };
  }

  async close(): Promise<void> {
    await Promise.all(this.children.map((child) => this.ask(child, { type: 'close' })));
  }

  /** CPU time the client processes have used so far, ms. */
  async cpuMs(): Promise<number> {
    const used = await Promise.all(this.children.map((child) => cpuMsOf(child.pid!)));
    return used.reduce((sum, ms) => sum + ms, 0);
  }

  stop(): void {
    for (const child of this.children) child.kill('SIGTERM');
  }

  private ask(child: ChildProcess, command: ClientCommand): Promise<ClientReply> {
    return new Promise((resolve, reject) => {
      const exited = (code: number | null) => reject(new Error(`socket client process exited (${code})`));
      child.once('exit', exited);
      child.once('message', (reply: ClientReply) => {
        child.off('exit', exited);
        resolve(reply);
      });
      child.send(command);
    });
  }
}
