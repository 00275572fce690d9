import { X509Certificate } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { hostname, networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { conflict } from '../domain/errors.js';
import type { LanSharing } from '../services/lab-settings.js';
import type { Clock } from '../services/scope.js';
import type { App } from './http.js';

export const LAN_CERTIFICATE_FILE = 'lan-certificate.pem';
export const LAN_KEY_FILE = 'lan-key.pem';
/** Apple refuses TLS server certificates valid for longer than 825 days, even ones the user chose to trust. */
const VALIDITY_DAYS = 825;

interface Certificate {
  cert: string;
  key: string;
  sha256: string;
  notAfter: number;
}

/**
 * LAN sharing: the same API (and GUI) as on loopback, from a second server built on the same context, over HTTPS
 * on every interface. Its self-signed certificate is made once and kept in the data dir, so the fingerprint that
 * teammates checked stays the same across restarts. Plain HTTP never leaves loopback.
 */
export class LanServer implements LanSharing {
  private app: App | undefined;
  private certificate: Certificate | undefined;
  /** Enable and disable run one at a time: two PATCHes at once must not both listen on the port. */
  private queue: Promise<unknown> = Promise.resolve();

  /** `build` makes the API server over TLS: the same routes and services as the loopback one. */
  constructor(
    private readonly config: { dataDir: string; lanPort: number },
    private readonly build: (https: { cert: string; key: string }) => Promise<App>,
    private readonly now: Clock,
  ) {}

  status() {
    const port = this.app ? (this.app.server.address() as AddressInfo).port : this.config.lanPort;
    return {
      enabled: this.app !== undefined,
      port,
      urls: this.app ? lanUrls(port) : [],
      certificateSha256: this.stored()?.sha256 ?? null,
    };
  }

  lanAddress(): string | null {
    return lanAddresses()[0] ?? null;
  }

  certificatePem(): string | null {
    return this.stored()?.cert ?? null;
  }

  enable(): Promise<void> {
    return this.serially(async () => {
      if (this.app) return;
      const { cert, key } = await this.ensureCertificate();
      const app = await this.build({ cert, key });
      try {
        await app.listen({ host: '0.0.0.0', port: this.config.lanPort });
      } catch (error) {
        await app.close();
        throw conflict('lan_port_unavailable', `LAN sharing could not listen on port ${this.config.lanPort}: ${(error as Error).message}`);
      }
      this.app = app;
    });
  }

  disable(): Promise<void> {
    return this.serially(async () => {
      const app = this.app;
      this.app = undefined;
      await app?.close();
    });
  }

  private serially(work: () => Promise<void>): Promise<void> {
    const run = this.queue.then(work, work);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private stored(): Certificate | undefined {
    if (this.certificate) return this.certificate;
    const certPath = join(this.config.dataDir, LAN_CERTIFICATE_FILE);
    const keyPath = join(this.config.dataDir, LAN_KEY_FILE);
    if (!existsSync(certPath) || !existsSync(keyPath)) return undefined;
    const cert = readFileSync(certPath, 'utf8');
    const x509 = new X509Certificate(cert);
    this.certificate = { cert, key: readFileSync(keyPath, 'utf8'), sha256: x509.fingerprint256, notAfter: Date.parse(x509.validTo) };
    return this.certificate;
  }

  /** The stored certificate, or a new one when there is none or it has expired. */
  private async ensureCertificate(): Promise<Certificate> {
    const stored = this.stored();
    if (stored && stored.notAfter > this.now()) return stored;
    const name = hostname();
    const now = new Date(this.now());
    // Loaded only to make a certificate: once per lab, and never for a lab that keeps to localhost.
    const { generate } = await import('selfsigned');
    const pems = await generate([{ name: 'commonName', value: name }, { name: 'organizationName', value: 'Benchtop' }], {
      keyType: 'ec',
      curve: 'P-256',
      algorithm: 'sha256',
      notBeforeDate: now,
      notAfterDate: new Date(now.getTime() + VALIDITY_DAYS * 86_400_000),
      extensions: [
        { name: 'basicConstraints', cA: false },
        { name: 'keyUsage', digitalSignature: true, critical: true },
        { name: 'extKeyUsage', serverAuth: true },
        {
          name: 'subjectAltName',
          altNames: [
            { type: 2, value: name },
            { type: 2, value: 'localhost' },
            { type: 7, ip: '127.0.0.1' },
            ...lanAddresses().map((ip) => ({ type: 7 as const, ip })),
          ],
        },
      ],
    });
    const keyPath = join(this.config.dataDir, LAN_KEY_FILE);
    writeFileSync(keyPath, pems.private, { mode: 0o600 });
    // The mode given to writeFileSync is filtered by the umask, and an existing file keeps its old mode.
    chmodSync(keyPath, 0o600);
    writeFileSync(join(this.config.dataDir, LAN_CERTIFICATE_FILE), pems.cert);
    this.certificate = undefined;
    return this.stored()!;
  }
}

/** The machine's non-internal IPv4 addresses: what teammates on the LAN can reach. */
function lanAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flat()
    .filter((a) => a !== undefined && a.family === 'IPv4' && !a.internal)
    .map((a) => a!.address);
}

function lanUrls(port: number): string[] {
  return [...lanAddresses(), hostname()].map((host) => `https://${host}:${port}`);
}
