import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Readable } from 'node:stream';
import type { Client, ClientChannel, ConnectConfig, PseudoTtyOptions } from 'ssh2';
import type * as Ssh2 from 'ssh2';

// ssh2 holds about 12 MB once loaded: a lab with no Mac host never loads it. It is CommonJS, so require() it.
let ssh2: typeof Ssh2 | undefined;
const loadSsh2 = (): typeof Ssh2 => (ssh2 ??= createRequire(import.meta.url)('ssh2') as typeof Ssh2);

/** How to log in. Exactly one of privateKey and password is normally set. */
export interface SshCredentials {
  username: string;
  privateKey?: string;
  passphrase?: string;
  password?: string;
}

export interface SshEndpoint extends SshCredentials {
  host: string;
  port: number;
}

export interface ExecResult {
  /** null when the command was killed by a signal or timed out. */
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  /** Output past maxOutputBytes (per stream) was dropped. */
  truncated: boolean;
}

export interface ExecOptions {
  timeoutMs: number;
  signal?: AbortSignal;
  /** Per stream; the rest is dropped and `truncated` is set. */
  maxOutputBytes?: number;
}

const DEFAULT_MAX_OUTPUT = 1024 * 1024;

/** The OpenSSH spelling of a host key's fingerprint: SHA256:<unpadded base64>. */
const fingerprintOf = (key: Buffer) => `SHA256:${createHash('sha256').update(key).digest('base64').replace(/=+$/, '')}`;

/** One word of POSIX shell: the value single-quoted, so nothing in it is expanded. */

/** A readable error for a private key that cannot be used, or undefined when it parses. */
export function privateKeyProblem(privateKey: string, passphrase?: string): string | undefined {
  const parsed = loadSsh2().utils.parseKey(privateKey, passphrase);
  if (parsed instanceof Error) return parsed.message;
  if (Array.isArray(parsed) ? parsed.length === 0 : !parsed) return 'No key found in it.';
  return undefined;
}

/** ssh2's errors in a sentence that says what to fix; credentials are never part of one. */
function describeConnectError(error: Error & { level?: string; code?: string }, where: string): string {
  if (error.code === 'ECONNREFUSED') return `connection refused at ${where}`;
  if (error.code === 'ECONNRESET') return `connection reset by ${where}`;
  if (error.code === 'ENOTFOUND' || error.code === 'EAI_AGAIN') return `cannot resolve ${where}`;
  if (error.code === 'EHOSTUNREACH' || error.code === 'ENETUNREACH') return `no route to ${where}`;
  if (error.level === 'client-authentication') return `authentication failed at ${where}`;
  if (error.level === 'client-timeout') return `timed out waiting for SSH at ${where}`;
  return `${error.message} (${where})`;
}

/** An error whose message is fit for a status message or a log line. */
export class SshError extends Error {
  override name = 'SshError';
}

/**
 * The fingerprint of the host key an sshd presents, read from the key exchange alone: nothing is logged in to or
 * trusted, so that a person can compare it with the one the box itself shows (`ssh-keygen -lf`) before pinning it.
 */
export function readHostKey(host: string, port: number, timeoutMs: number): Promise<string> {
  const where = `${host}:${port}`;
  return new Promise((resolve, reject) => {
    const client = new (loadSsh2().Client)();
    let seen: string | undefined;
    const done = () => {
      client.end();
      if (seen) resolve(seen);
    };
    client.on('error', (error: Error & { level?: string; code?: string }) => {
      done();
      reject(new SshError(describeConnectError(error, where)));
    });
    client.once('close', () => {
      done();
      reject(new SshError(`${where} closed the connection during the handshake`));
    });
    client.connect({
      host,
      port,
      username: 'benchtop-host-key',
      readyTimeout: timeoutMs,
      // Refused once seen: the handshake ends before any login is tried.
      hostVerifier: (key: Buffer) => {
        seen = fingerprintOf(key);
        done();
        return false;
      },
    });
  });
}

export interface ConnectOptions {
  /** For the SSH handshake, login included. */
  timeoutMs: number;
  /** A stream to speak SSH over instead of TCP: a channel forwarded by another connection (a jump). */
  sock?: Readable;
  /** Refuse the server unless its key has this fingerprint. */
  expectedHostKey?: string | null;
  signal?: AbortSignal;
  /**
   * How often an idle connection is probed; three unanswered probes end it. Default 5 s (a Mac that sleeps is
   * noticed within 15 s); a provider's phones want less.
   */
  keepaliveMs?: number;
}

/** One SSH connection: exec, port forwarding for a jump, and the raw ssh2 client for shells. */
export class SshConnection {
  private closed = false;
  private readonly onClose = new Set<() => void>();

  private constructor(
    readonly client: Client,
    /** The server's host key fingerprint, as seen during this handshake. */
    readonly hostKey: string,
  ) {
    client.on('close', () => {
      this.closed = true;
      for (const listener of this.onClose) listener();
      this.onClose.clear();
    });
    // After the handshake an error (a reset socket) is followed by close; close is what the users of this wait for.
    client.on('error', () => {});
  }

  static connect(endpoint: SshEndpoint, options: ConnectOptions): Promise<SshConnection> {
    const where = `${endpoint.host}:${endpoint.port}`;
    return new Promise((resolve, reject) => {
      const client = new (loadSsh2().Client)();
      let seen = '';
      let settled = false;
      const settle = (error: Error | undefined) => {
        if (settled) return;
        settled = true;
        options.signal?.removeEventListener('abort', onAbort);
        if (error) {
          client.end();
          reject(error);
        } else {
          resolve(new SshConnection(client, seen));
        }
      };
      const onAbort = () => settle(new SshError(`aborted while connecting to ${where}`));
      if (options.signal?.aborted) return onAbort();
      options.signal?.addEventListener('abort', onAbort, { once: true });
      client.once('ready', () => settle(undefined));
      // on, not once: a second error before the connection is handed over must not go unhandled.
      client.on('error', (error: Error & { level?: string }) => {
        if (options.expectedHostKey && seen && seen !== options.expectedHostKey) {
          settle(new SshError(`the host key of ${where} changed: expected ${options.expectedHostKey}, got ${seen}`));
        } else {
          settle(new SshError(describeConnectError(error, where)));
        }
      });
      client.once('close', () => settle(new SshError(`${where} closed the connection during the handshake`)));
      const config: ConnectConfig = {
        host: endpoint.host,
        port: endpoint.port,
        username: endpoint.username,
        readyTimeout: options.timeoutMs,
        // A Mac that sleeps or loses its network is noticed within 15 s on a long-lived connection.
        keepaliveInterval: options.keepaliveMs ?? 5000,
        keepaliveCountMax: 3,
        hostVerifier: (key: Buffer) => {
          seen = fingerprintOf(key);
          return !options.expectedHostKey || seen === options.expectedHostKey;
        },
        ...(options.sock ? { sock: options.sock } : {}),
        ...(endpoint.privateKey ? { privateKey: endpoint.privateKey, passphrase: endpoint.passphrase } : {}),
        ...(endpoint.password !== undefined ? { password: endpoint.password } : {}),
      };
      try {
        client.connect(config);
        // Keystrokes in a terminal (and each short step) go out at once, not after Nagle's wait for an ACK.
        client.setNoDelay(true);
      } catch (error) {
        // ssh2 throws synchronously for a key it cannot parse.
        settle(new SshError(`cannot use the private key: ${(error as Error).message}`));
      }
    });
  }

  /** Runs a command through the login shell and collects its output; rejects only when the connection fails. */
  exec(command: string, options: ExecOptions): Promise<ExecResult> {
    const max = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT;
    return new Promise((resolve, reject) => {
      if (this.closed) return reject(new SshError('the SSH connection is closed'));
      if (options.signal?.aborted) return reject(new SshError('aborted'));
      this.guard(reject, () => this.client.exec(command, (error, channel) => {
        if (error) return reject(new SshError(`cannot run a command: ${error.message}`));
        const out = collector(max);
        const err = collector(max);
        let exitCode: number | null = null;
        let signal: string | null = null;
        let timedOut = false;
        let done = false;
        const finish = (failure?: Error) => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          options.signal?.removeEventListener('abort', onAbort);
          this.onClose.delete(onConnectionClose);
          if (failure) return reject(failure);
          resolve({ exitCode, signal, stdout: out.text(), stderr: err.text(), timedOut, truncated: out.truncated || err.truncated });
        };
        const kill = () => {
          // OpenSSH honours the signal request; closing the channel also ends a command that writes output.
          try {
            channel.signal('KILL');
          } catch {
            /* the channel may be closing already */
          }
          channel.close();
        };
        const timer = setTimeout(() => {
          timedOut = true;
          kill();
          finish();
        }, options.timeoutMs);
        const onAbort = () => {
          kill();
          finish(new SshError('aborted'));
        };
        const onConnectionClose = () => finish(new SshError('the SSH connection was lost'));
        options.signal?.addEventListener('abort', onAbort, { once: true });
        this.onClose.add(onConnectionClose);
        channel.on('data', (chunk: Buffer) => out.add(chunk));
        channel.stderr.on('data', (chunk: Buffer) => err.add(chunk));
        channel.on('exit', (code: number | null, signalName?: string) => {
          exitCode = code;
          signal = signalName ?? null;
        });
        channel.on('close', () => finish());
      }));
    });
  }

  /** ssh2 throws synchronously when the connection has just gone away: that is a rejection here, not a crash. */
  private guard(reject: (error: Error) => void, call: () => void): void {
    try {
      call();
    } catch (error) {
      reject(new SshError(`the SSH connection is gone: ${(error as Error).message}`));
    }
  }

  /** An interactive shell on a PTY; with a command, that command runs on the PTY in place of the login shell. */
  shell(pty: PseudoTtyOptions, command?: string): Promise<ClientChannel> {
    return new Promise((resolve, reject) => {
      if (this.closed) return reject(new SshError('the SSH connection is closed'));
      const opened = (error: Error | undefined, channel: ClientChannel) => {
        if (error) reject(new SshError(`cannot open a shell: ${error.message}`));
        else resolve(channel);
      };
      this.guard(reject, () => (command === undefined ? this.client.shell(pty, opened) : this.client.exec(command, { pty }, opened)));
    });
  }

  /** A channel to address:port as seen from the server: what a jump to a VM behind the host speaks SSH over. */
  forwardOut(address: string, port: number): Promise<ClientChannel> {
    return new Promise((resolve, reject) => {
      if (this.closed) return reject(new SshError('the SSH connection is closed'));
      this.guard(reject, () => this.client.forwardOut('127.0.0.1', 0, address, port, (error, channel) => {
        if (error) reject(new SshError(`cannot reach ${address}:${port} through the host: ${error.message}`));
        else resolve(channel);
      }));
    });
  }

  /** A channel to a Unix socket on the server (OpenSSH's streamlocal forwarding): a provider's usbmuxd. */
  forwardOutUnix(socketPath: string): Promise<ClientChannel> {
    return new Promise((resolve, reject) => {
      if (this.closed) return reject(new SshError('the SSH connection is closed'));
      this.guard(reject, () => this.client.openssh_forwardOutStreamLocal(socketPath, (error, channel) => {
        if (error) reject(new SshError(`cannot reach ${socketPath} through the host: ${error.message}`));
        else resolve(channel);
      }));
    });
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Called once when the connection ends, for whatever reason. */
  whenClosed(listener: () => void): void {
    if (this.closed) listener();
    else this.onClose.add(listener);
  }

  close(): void {
    if (!this.closed) this.client.end();
  }

  /**
   * Closes at once, without the goodbye: for a link taken for dead. end() on a dead link would wait for TCP to give
   * up (minutes), and with it every channel still opening and every command still running.
   */
  destroy(): void {
    if (!this.closed) this.client.destroy();
  }
}

function collector(max: number) {
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  return {
    add(chunk: Buffer) {
      if (size >= max) {
        truncated = true;
        return;
      }
      const room = max - size;
      if (chunk.length > room) truncated = true;
      const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
      chunks.push(kept);
      size += kept.length;
    },
    text: () => Buffer.concat(chunks).toString('utf8'),
    get truncated() {
      return truncated;
    },
  };
}
