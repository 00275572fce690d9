import { randomUUID } from 'node:crypto';
import type { CreateMacHostBody, UpdateMacHostBody } from '../../../shared/api/mac-hosts.js';
import { conflict, invalid, notFound } from '../domain/errors.js';
import { privateKeyProblem } from '../fleet/macos/ssh.js';
import type { Stores } from '../store/index.js';
import type { HostAuth, MacHostFields, MacHostRow, VmAuth } from '../store/mac-hosts.js';
import type { HostSecrets, HostSecretStore } from './host-secrets.js';
import type { HostHealth } from './instances.js';
import type { Caller, Clock, Scope } from './scope.js';

/** What the host administration reads and writes: the hosts, and the instances on them (to refuse a change). */
export type MacHostStores = Pick<Stores, 'macHosts' | 'instances'>;

/** What the host administration needs from whoever watches the hosts and runs instances on them (InstanceManager). */
export interface HostMonitor {
  healthOf(hostId: string): HostHealth;
  freeSlots(host: MacHostRow): number;
  /** Checks the host soon: it was added or edited. */
  recheck(hostId: string): void;
  /** The host was removed. */
  forget(hostId: string): void;
}

export interface MacHostOptions {
  /** Throws forbidden unless the caller is the lab owner, signed in interactively: hosts are lab administration. */
  requireLabOwner: (caller: Caller) => void;
}

/** A host as the lab owner sees it: with its health. */
export interface MacHostView {
  host: MacHostRow;
  health: HostHealth;
}

/** A host as any signed-in caller sees it: health, free slots, and the caller's organization's instances on it. */
export interface FleetHostView extends MacHostView {
  freeSlots: number;
  own: Array<{ sessionId: string; instanceId: string }>;
}

const DEFAULTS = { port: 22, cpuCores: 4, memoryMb: 8192, diskMb: 51_200, vmUsername: 'admin', vmPort: 22, workDir: 'benchtop-work' };
/** Apple's licence allows two macOS VMs per Mac, and Virtualization.framework enforces it. */
const TART_DEFAULT_SLOTS = 2;

/** The host's login: exactly one of a private key (with its passphrase, if any) and a password. */
export function hostCredential(body: { privateKey?: string; passphrase?: string; password?: string }): { auth: HostAuth; secrets: HostSecrets } | undefined {
  if (body.privateKey !== undefined && body.password !== undefined) {
    throw invalid('ambiguous_credentials', 'Give either privateKey or password, not both.');
  }
  if (body.privateKey !== undefined) {
    const problem = privateKeyProblem(body.privateKey, body.passphrase);
    if (problem) throw invalid('invalid_private_key', `The private key cannot be used: ${problem}`);
    return { auth: 'privateKey', secrets: { privateKey: body.privateKey, ...(body.passphrase ? { passphrase: body.passphrase } : {}) } };
  }
  if (body.passphrase !== undefined) throw invalid('passphrase_without_key', 'A passphrase goes with a privateKey.');
  if (body.password !== undefined) return { auth: 'password', secrets: { password: body.password } };
  return undefined;
}

function vmCredential(body: { vmPrivateKey?: string; vmPassword?: string }): { vmAuth: VmAuth; secrets: HostSecrets } | undefined {
  if (body.vmPrivateKey !== undefined && body.vmPassword !== undefined) {
    throw invalid('ambiguous_credentials', 'Give either vmPrivateKey or vmPassword, not both.');
  }
  if (body.vmPrivateKey !== undefined) {
    const problem = privateKeyProblem(body.vmPrivateKey);
    if (problem) throw invalid('invalid_private_key', `The VM's private key cannot be used: ${problem}`);
    return { vmAuth: 'privateKey', secrets: { vmPrivateKey: body.vmPrivateKey } };
  }
  if (body.vmPassword !== undefined) return { vmAuth: 'password', secrets: { vmPassword: body.vmPassword } };
  return undefined;
}

/** What tart clone accepts: a local VM name or an OCI reference such as ghcr.io/cirruslabs/macos-sequoia-base:latest. */
const TART_IMAGE = /^[A-Za-z0-9][A-Za-z0-9._/:@+-]*$/;

function checkShape(fields: Pick<MacHostFields, 'mode' | 'maxInstances' | 'workDir' | 'baseImage'>): void {
  if (fields.mode === 'tart' && !TART_IMAGE.test(fields.baseImage)) {
    throw invalid('invalid_base_image', `"${fields.baseImage}" is not a Tart image name or OCI reference.`);
  }
  if (fields.mode === 'bare' && fields.maxInstances !== 1) {
    throw invalid('bare_host_single', 'A bare host is itself the instance: it takes one at a time (maxInstances 1).');
  }
  const segments = fields.workDir.split('/').filter(Boolean);
  if (segments.some((s) => s === '.' || s === '..') || (fields.workDir.startsWith('/') && segments.length < 2)) {
    throw invalid('invalid_work_dir', 'workDir is cleared on release: give a dedicated directory, not ".", "..", or a top-level one.');
  }
}

/**
 * The lab's Mac hosts: lab administration, for the lab owner. Credentials go to the secret store, never to SQLite
 * or an answer; health and free slots come from the host monitor.
 */
export class MacHosts {
  constructor(
    private readonly stores: MacHostStores,
    private readonly secrets: HostSecretStore,
    private readonly monitor: HostMonitor,
    private readonly now: Clock,
    private readonly options: MacHostOptions,
  ) {}

  list(caller: Caller): MacHostView[] {
    this.options.requireLabOwner(caller);
    return this.stores.macHosts.all().map((host) => this.viewOf(host));
  }

  get(caller: Caller, hostId: string): MacHostView {
    this.options.requireLabOwner(caller);
    return this.viewOf(this.hostOf(hostId));
  }

  async create(caller: Caller, body: CreateMacHostBody): Promise<MacHostView> {
    this.options.requireLabOwner(caller);
    const login = hostCredential(body);
    if (!login) throw invalid('credentials_required', 'Give the host\'s privateKey or password.');
    const vm = vmCredential(body);
    const fields: MacHostFields = {
      name: body.name,
      address: body.address,
      port: body.port ?? DEFAULTS.port,
      username: body.username,
      auth: login.auth,
      mode: body.mode,
      baseImage: body.baseImage,
      maxInstances: body.maxInstances ?? (body.mode === 'bare' ? 1 : TART_DEFAULT_SLOTS),
      cpuCores: body.cpuCores ?? DEFAULTS.cpuCores,
      memoryMb: body.memoryMb ?? DEFAULTS.memoryMb,
      diskMb: body.diskMb ?? DEFAULTS.diskMb,
      vmUsername: body.vmUsername ?? DEFAULTS.vmUsername,
      vmPort: body.vmPort ?? DEFAULTS.vmPort,
      vmAuth: vm?.vmAuth ?? 'default',
      workDir: body.workDir ?? DEFAULTS.workDir,
      hostKeySha256: body.hostKeySha256 ?? null,
    };
    checkShape(fields);
    this.uniqueName(fields.name);
    const id = randomUUID();
    // The secret is stored first: a host row never exists without its credentials.
    await this.secrets.write(id, { ...login.secrets, ...vm?.secrets });
    try {
      this.uniqueName(fields.name);
      this.stores.macHosts.insert({ ...fields, id, now: this.now() });
    } catch (error) {
      await this.secrets.remove(id);
      throw error;
    }
    this.monitor.recheck(id);
    return this.viewOf(this.stores.macHosts.get(id)!);
  }

  async update(caller: Caller, hostId: string, patch: UpdateMacHostBody): Promise<MacHostView> {
    this.options.requireLabOwner(caller);
    const host = this.hostOf(hostId);
    const login = hostCredential(patch);
    const vm = vmCredential(patch);
    const mode = patch.mode ?? host.mode;
    const fields: Partial<MacHostFields> = {
      ...Object.fromEntries(Object.entries(patch).filter(([key]) => !['privateKey', 'passphrase', 'password', 'vmPrivateKey', 'vmPassword'].includes(key))),
      ...(login ? { auth: login.auth } : {}),
      ...(vm ? { vmAuth: vm.vmAuth } : {}),
      // A host turned bare takes one instance at a time unless told otherwise (and then refused below).
      ...(patch.mode === 'bare' && patch.maxInstances === undefined ? { maxInstances: 1 } : {}),
    };
    if (fields.address === host.address) delete fields.address;
    if (fields.port === host.port) delete fields.port;
    checkShape({ mode, maxInstances: fields.maxInstances ?? host.maxInstances, workDir: fields.workDir ?? host.workDir, baseImage: fields.baseImage ?? host.baseImage });
    if (fields.name !== undefined) this.uniqueName(fields.name, host.id);
    if (mode !== host.mode && this.stores.instances.onHost(host.id).length > 0) {
      throw conflict('host_in_use', 'The host still has instances; release them (and let their teardown finish) before changing its mode.');
    }
    if (login || vm) {
      const current = await this.secrets.read(host.id);
      const { privateKey: _k, passphrase: _p, password: _w, ...vmPart } = current;
      const { vmPrivateKey: _vk, vmPassword: _vw, ...hostPart } = current;
      await this.secrets.write(host.id, { ...(login ? login.secrets : hostPart), ...(vm ? vm.secrets : vmPart) });
    }
    this.stores.macHosts.update(host.id, fields, this.now());
    this.monitor.recheck(host.id);
    return this.viewOf(this.stores.macHosts.get(host.id)!);
  }

  /**
   * Refused while an instance is provisioning or ready on it, and while a reachable host still has released VMs to
   * delete (forgetting the host then would leave them on the Mac). A host that is down is let go with its leftovers:
   * the lab owner removing it is the only way they could ever be dropped.
   */
  async remove(caller: Caller, hostId: string): Promise<void> {
    this.options.requireLabOwner(caller);
    const host = this.hostOf(hostId);
    const onHost = this.stores.instances.onHost(host.id);
    const active = onHost.filter((i) => i.status === 'provisioning' || i.status === 'ready');
    if (active.length > 0) {
      throw conflict('host_in_use', `${active.length} instance(s) still run on ${host.name}; they must be released first.`);
    }
    if (onHost.length > 0 && this.monitor.healthOf(host.id).state !== 'down') {
      throw conflict('teardown_pending', `${host.name} is still deleting ${onHost.length} released instance(s); try again in a moment.`);
    }
    this.stores.macHosts.remove(host.id);
    await this.secrets.remove(host.id);
    this.monitor.forget(host.id);
  }

  /** Every host with its health and free slots, to any signed-in caller; the instances listed are the caller's organization's only. */
  fleet(scope: Scope): FleetHostView[] {
    return this.stores.macHosts.all().map((host) => ({
      ...this.viewOf(host),
      freeSlots: this.monitor.freeSlots(host),
      own: this.stores.instances
        .onHost(host.id)
        .filter((i) => i.organizationId === scope.organization.id && (i.status === 'provisioning' || i.status === 'ready'))
        .map((i) => ({ sessionId: i.sessionId, instanceId: i.id })),
    }));
  }

  private viewOf(host: MacHostRow): MacHostView {
    return { host, health: this.monitor.healthOf(host.id) };
  }

  private hostOf(hostId: string): MacHostRow {
    const host = this.stores.macHosts.get(hostId);
    if (!host) throw notFound('host');
    return host;
  }

  private uniqueName(name: string, self?: string): void {
    const other = this.stores.macHosts.byName(name);
    if (other && other.id !== self) throw conflict('host_name_taken', `A Mac host named "${name}" already exists.`);
  }
}
