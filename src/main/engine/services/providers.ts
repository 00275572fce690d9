import { randomUUID } from 'node:crypto';
import type { CreateProviderBody, UpdateProviderBody } from '../../../shared/api/providers.js';
import { conflict, invalid, notFound } from '../domain/errors.js';
import type { Fleet } from '../fleet/index.js';
import { readHostKey } from '../fleet/macos/ssh.js';
import type { Provider, ProviderHealth, ProviderIosLaunch, ProviderSpec, ProviderTiming } from '../fleet/providers/provider.js';
import type { Stores } from '../store/index.js';
import type { ProviderFields, ProviderRow } from '../store/providers.js';
import type { HostSecretStore } from './host-secrets.js';
import { hostCredential } from './mac-hosts.js';
import type { Caller, Clock } from './scope.js';

export type ProviderStores = Pick<Stores, 'providers' | 'devices'>;

export interface ProvidersOptions {
  requireLabOwner: (caller: Caller) => void;
  timing: ProviderTiming;
  log: (message: string) => void;
  /** The WebDriverAgent runner a Mac provider starts on its iOS 17+ iPhones (BENCHTOP_WDA_BUNDLE_ID). */
  wdaBundleId?: string;
  /** The lab's go-ios and DDI, with which the hub starts WDA on a provider's iOS 17.4+ iPhones where the provider has no devicectl. */
  iosLaunch?: ProviderIosLaunch;
}

/** A provider as the lab owner sees it: the row, its health now, its phones, and the serials kept out as duplicates. */
export interface ProviderView {
  provider: ProviderRow;
  health: ProviderHealth;
  phones: number;
  duplicateSerials: string[];
}

const DEFAULTS = { port: 22, adbPort: 5037, usbmuxdSocket: '/var/run/usbmuxd' };
// Not provider.ts's UNKNOWN_HEALTH: that module (and adbkit with it) loads with the first provider.
const UNKNOWN: ProviderHealth = { state: 'unknown', message: null, checkedAt: null, rttMs: null, adbVersion: null, os: null, devicectl: null };

/**
 * The lab's providers: lab administration, for the lab owner (as Mac hosts are). Each one runs as a Provider
 * attached to the fleet; credentials go to the secret store, never to SQLite or an answer.
 */
export class Providers {
  private readonly running = new Map<string, Provider>();

  constructor(
    private readonly stores: ProviderStores,
    private readonly secrets: HostSecretStore,
    private readonly fleet: Pick<Fleet, 'attach' | 'detach' | 'duplicates'>,
    private readonly now: Clock,
    private readonly options: ProvidersOptions,
  ) {}

  /** Connects to every provider in the background. */
  start(): void {
    for (const row of this.stores.providers.all()) void this.launch(row);
  }

  async stop(): Promise<void> {
    const all = [...this.running.values()];
    this.running.clear();
    for (const provider of all) this.fleet.detach(provider);
    await Promise.all(all.map((p) => p.stop()));
  }

  list(caller: Caller): ProviderView[] {
    this.options.requireLabOwner(caller);
    return this.stores.providers.all().map((row) => this.viewOf(row));
  }

  get(caller: Caller, id: string): ProviderView {
    this.options.requireLabOwner(caller);
    return this.viewOf(this.rowOf(id));
  }

  /** Adds a provider and checks it at once: the answer says whether it is up, and if not, why. */
  async create(caller: Caller, body: CreateProviderBody): Promise<ProviderView> {
    this.options.requireLabOwner(caller);
    const login = hostCredential(body);
    if (!login) throw invalid('credentials_required', 'Give the provider\'s privateKey or password.');
    const fields: ProviderFields = {
      name: body.name,
      address: body.address,
      port: body.port ?? DEFAULTS.port,
      username: body.username,
      auth: login.auth,
      hostKeySha256: body.hostKeySha256 ?? null,
      adbPort: body.adbPort ?? DEFAULTS.adbPort,
      usbmuxdSocket: body.usbmuxdSocket ?? DEFAULTS.usbmuxdSocket,
      paused: false,
    };
    this.uniqueName(fields.name);
    // Nothing is stored for a box whose key cannot be read, or is not the one the owner confirmed.
    const seen = await this.readHostKey(fields.address, fields.port);
    if (fields.hostKeySha256 && fields.hostKeySha256 !== seen) {
      throw conflict('host_key_mismatch', `${fields.address}:${fields.port} presents the host key ${seen}, not the ${fields.hostKeySha256} given; nothing was added. Compare it with what the box itself shows (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub).`);
    }
    const id = randomUUID();
    await this.secrets.write(id, login.secrets);
    try {
      this.uniqueName(fields.name);
      this.stores.providers.insert({ ...fields, id, now: this.now() });
      await (await this.launch(this.stores.providers.get(id)!)).start();
    } catch (error) {
      // A failed add leaves nothing behind: no row, no secret, no provider on the fleet.
      await this.discard(id);
      throw error;
    }
    return this.viewOf(this.stores.providers.get(id)!);
  }

  /** The host key a provider's sshd presents, for the owner to confirm before adding it; nothing is stored or trusted. */
  async hostKey(caller: Caller, address: string, port = DEFAULTS.port): Promise<string> {
    this.options.requireLabOwner(caller);
    return this.readHostKey(address, port);
  }

  private async readHostKey(address: string, port: number): Promise<string> {
    try {
      return await readHostKey(address, port, this.options.timing.connectTimeoutMs);
    } catch (error) {
      throw invalid('provider_unreachable', `No sshd answered at ${address}:${port}: ${(error as Error).message}.`);
    }
  }

  private async discard(id: string): Promise<void> {
    const provider = this.running.get(id);
    this.running.delete(id);
    if (provider) {
      this.fleet.detach(provider);
      await provider.stop();
    }
    if (this.stores.providers.get(id)) this.stores.providers.remove(id);
    await this.secrets.remove(id);
  }

  async update(caller: Caller, id: string, patch: UpdateProviderBody): Promise<ProviderView> {
    this.options.requireLabOwner(caller);
    const row = this.rowOf(id);
    const login = hostCredential(patch);
    const fields: Partial<ProviderFields> = {
      ...Object.fromEntries(Object.entries(patch).filter(([key]) => !['privateKey', 'passphrase', 'password'].includes(key))),
      ...(login ? { auth: login.auth } : {}),
    };
    if (fields.address === row.address) delete fields.address;
    if (fields.port === row.port) delete fields.port;
    if (fields.name !== undefined) this.uniqueName(fields.name, row.id);
    if (fields.name !== undefined && fields.name.toLowerCase() !== row.name.toLowerCase() && this.heldOn(row.id) > 0) {
      throw conflict('provider_in_use', 'Its phones are held; a new name would move them to another host. Rename it once they are released.');
    }
    if (login) await this.secrets.write(row.id, login.secrets);
    this.stores.providers.update(row.id, fields, this.now());
    const updated = this.stores.providers.get(row.id)!;
    const provider = this.running.get(row.id);
    if (provider) {
      const reconnect = provider.update(this.specOf(updated));
      // Anything but pausing is also a request to check it now: the answer carries the fresh health.
      if (login || reconnect) await provider.recheck(true);
      else if (Object.keys(patch).some((key) => key !== 'paused')) await provider.recheck();
    }
    return this.viewOf(updated);
  }

  /** Refused while one of its phones is held: the holder would lose it without a word. */
  async remove(caller: Caller, id: string): Promise<void> {
    this.options.requireLabOwner(caller);
    const row = this.rowOf(id);
    const held = this.heldOn(row.id);
    if (held > 0) throw conflict('provider_in_use', `${held} of ${row.name}'s phones are held; release them first.`);
    this.stores.providers.remove(row.id);
    await this.secrets.remove(row.id);
    const provider = this.running.get(row.id);
    this.running.delete(row.id);
    if (provider) {
      this.fleet.detach(provider);
      await provider.stop();
    }
  }

  /** Every provider with its health and phones, to any signed-in caller (the fleet screen); no address or login. */
  onFleet(): ProviderView[] {
    return this.stores.providers.all().map((row) => this.viewOf(row));
  }

  /** Every provider's health and phones, for metrics. */
  status(): Array<{ name: string; health: ProviderHealth; phones: number; paused: boolean }> {
    return this.stores.providers.all().map((row) => ({ name: row.name, health: this.healthOf(row.id), phones: this.running.get(row.id)?.list().length ?? 0, paused: row.paused }));
  }

  private async launch(row: ProviderRow): Promise<Provider> {
    // The provider's code brings the Android and iOS fleets' (adbkit among them): loaded with the first provider, so
    // that a lab without providers starts without it, as the local fleets load after the API answers.
    const { Provider } = await import('../fleet/providers/provider.js');
    const provider = new Provider(
      this.specOf(row),
      async () => {
        const s = await this.secrets.read(row.id);
        return { privateKey: s.privateKey, passphrase: s.passphrase, password: s.password };
      },
      this.options.timing,
      this.options.log,
      this.now,
      (fingerprint) => this.stores.providers.pinHostKey(row.id, fingerprint),
      this.options.wdaBundleId,
      this.options.iosLaunch,
    );
    this.running.set(row.id, provider);
    this.fleet.attach(provider);
    void provider.start();
    return provider;
  }

  private specOf(row: ProviderRow): ProviderSpec {
    return {
      id: row.id,
      name: row.name,
      endpoint: { host: row.address, port: row.port, username: row.username },
      hostKey: row.hostKeySha256,
      adbPort: row.adbPort,
      usbmuxdSocket: row.usbmuxdSocket,
      paused: row.paused,
    };
  }

  private healthOf(id: string): ProviderHealth {
    return this.running.get(id)?.health ?? UNKNOWN;
  }

  private heldOn(id: string): number {
    const provider = this.running.get(id);
    return (provider?.list() ?? []).filter((p) => this.stores.devices.holding(p.serial)).length;
  }

  private viewOf(row: ProviderRow): ProviderView {
    const provider = this.running.get(row.id);
    const duplicates = this.fleet.duplicates().filter((d) => d.hosts.includes(row.name) && d.inFleet !== row.name).map((d) => d.serial);
    return {
      provider: row,
      health: this.healthOf(row.id),
      phones: (provider?.list() ?? []).filter((p) => !duplicates.includes(p.serial)).length,
      duplicateSerials: duplicates,
    };
  }

  private rowOf(id: string): ProviderRow {
    const row = this.stores.providers.get(id);
    if (!row) throw notFound('provider');
    return row;
  }

  private uniqueName(name: string, self?: string): void {
    const other = this.stores.providers.byName(name);
    if (other && other.id !== self) throw conflict('provider_name_taken', `A provider named "${name}" already exists.`);
  }
}
