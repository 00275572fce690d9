import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { WebSocket } from 'ws';

/**
 * The Mobile Next fleet's deployed clients, run unchanged from their npm packages: mobilecli 1.0.9 (`remote`), the
 * older @mobilenext/mobilecli 0.1.64 (`fleet`), both npm wrappers around a Go binary, and a JSON-RPC socket for the
 * protocol's own checks.
 */

export const MOBILECLI = resolve('node_modules/mobilecli/index.js');
export const MOBILECLI_0164 = resolve('node_modules/@mobilenext/mobilecli/index.js');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed, when it is JSON (mobilecli prints {"status","data"|"error"}). */
  json: any;
}

/**
 * A mobilecli with its own HOME (1.0.9 starts a daemon there, on a socket under ~/.mobilecli) and nothing of the
 * caller's environment but PATH, so neither a keyring nor a real fleet URL leaks in.
 */
export function mobilecli(bin: string, env: Record<string, string>) {
  const home = mkdtempSync(join(tmpdir(), 'benchtop-mobilecli-'));
  const run = (args: string[], timeoutMs = 60_000) =>
    new Promise<CliResult>((done) => {
      execFile(process.execPath, [bin, ...args], { env: { PATH: process.env.PATH ?? '', HOME: home, ...env }, timeout: timeoutMs }, (error, stdout, stderr) => {
        let json: any;
        try {
          json = JSON.parse(stdout);
        } catch {
          json = undefined;
        }
        done({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr, json });
      });
    });
  return {
    home,
    run,
    /** Stops the daemon this HOME's mobilecli started, if any, and removes the HOME. */
    async close() {
      if (bin === MOBILECLI) await run(['daemon', 'stop'], 10_000);
      // A daemon that did not stop is ended by its own pid file's pid, never by name.
      for (const pid of daemonPids(home)) {
        try {
          process.kill(pid);
        } catch {
          /* already gone */
        }
      }
      rmSync(home, { recursive: true, force: true });
    },
  };
}

/** The pids of mobilecli processes whose HOME is this one: only the daemon this test started can match. */
function daemonPids(home: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const environ = readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0');
      if (environ.includes(`HOME=${home}`) && readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('mobilecli')) pids.push(Number(entry));
    } catch {
      /* gone, or not ours to read */
    }
  }
  return pids;
}

export interface RpcReply {
  jsonrpc: '2.0';
  id: number | string | null;
  result?: any;
  error?: { code: number; message: string; data?: unknown };
}

/** A JSON-RPC client on one socket, with any number of calls in flight. */
export async function openRpc(url: string, headers: Record<string, string> = {}) {
  const ws = new WebSocket(url, { headers });
  await new Promise<void>((done, fail) => {
    ws.once('open', () => done());
    ws.once('error', fail);
  });
  const waiting = new Map<number | string | null, Array<(reply: any) => void>>();
  const unmatched: any[] = [];
  ws.on('message', (data) => {
    const reply = JSON.parse(data.toString());
    const key = Array.isArray(reply) ? 'batch' : reply.id;
    const queue = waiting.get(key);
    if (queue?.length) queue.shift()!(reply);
    else unmatched.push(reply);
  });
  const expect = (key: number | string | null) =>
    new Promise<any>((done) => {
      const i = unmatched.findIndex((r) => (Array.isArray(r) ? 'batch' : r.id) === key);
      if (i >= 0) return done(unmatched.splice(i, 1)[0]);
      waiting.set(key, [...(waiting.get(key) ?? []), done]);
    });
  let nextId = 1;
  return {
    ws,
    /** One request; resolves to the whole reply. */
    call(method: string, params?: unknown): Promise<RpcReply> {
      const id = nextId++;
      ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) }));
      return expect(id);
    },
    /** Raw text; resolves to the reply with this id (null for parse errors and invalid requests). */
    raw(text: string, id: number | string | null | 'batch'): Promise<any> {
      ws.send(text);
      return expect(id);
    },
    close: () =>
      new Promise<void>((done) => {
        if (ws.readyState === ws.CLOSED) return done();
        ws.once('close', () => done());
        ws.close(1000);
      }),
  };
}
