import { randomUUID } from 'node:crypto';
import type { CreateMacHostBody, UpdateMacHostBody } from '../../../shared/api/mac-hosts.js';
import { conflict, invalid, notFound } from '../domain/errors.js';
import { privateKeyProblem } from '../fleet/macos/ssh.js';
import type { HostAuth, MacHostFields, MacHostRow, VmAuth } from '../store/mac-hosts.js';
import type { EngineContext, Scope } from './context.js';

/** A host's credentials, kept in the secret store under one key per host. */
export interface HostSecrets {
  privateKey?: string;
  passphrase?: string;
  password?: string;
  vmPrivateKey?: string;
  vmPassword?: string;
}

const DEFAULTS = { port: 22, cpuCores: 4, memoryMb: 8192, diskMb: 51_200, vmUsername: 'admin', vmPort: 22, workDir: 'benchtop-work' };
/** Apple's licence allows two macOS VMs per Mac, and Virtualization.framework enforces it. */
const TART_DEFAULT_SLOTS = 2;

const secretKey = (hostId: string) => `mac-host:${hostId}`;

export async function hostSecrets(ctx: EngineContext, hostId: string): Promise<HostSecrets> {
  const raw = await ctx.secrets.get(secretKey(hostId));
  return raw ? (JSON.parse(raw) as HostSecrets) : {};
}

/** The host's login: exactly one of a private key (with its passphrase, if any) and a password. */
function hostCredential(body: { privateKey?: string; passphrase?: string; password?: string }): { auth: HostAuth; secrets: HostSecrets } | undefined {
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

function uniqueName(ctx: EngineContext, name: string, self?: string): void {
  const other = ctx.stores.macHosts.byName(name);
  if (other && other.id !== self) throw conflict('host_name_taken', `A Mac host named "${name}" already exists.`);
}

export function getHost(ctx: EngineContext, hostId: string): MacHostRow {
  const host = ctx.stores.macHosts.get(hostId);
  if (!host) throw notFound('host');
  return host;
}

export async function createHost(ctx: EngineContext, body: CreateMacHostBody): Promise<MacHostRow> {
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
  uniqueName(ctx, fields.name);
  const id = randomUUID();
  // The secret is stored first: a host row never exists without its credentials.
  await ctx.secrets.set(secretKey(id), JSON.stringify({ ...login.secrets, ...vm?.secrets }));
  try {
    uniqueName(ctx, fields.name);
    ctx.stores.macHosts.insert({ ...fields, id, now: ctx.now() });
  } catch (error) {
    await ctx.secrets.delete(secretKey(id));
    throw error;
  }
  ctx.instances.recheck(id);
  return ctx.stores.macHosts.get(id)!;
}

export async function updateHost(ctx: EngineContext, hostId: string, patch: UpdateMacHostBody): Promise<MacHostRow> {
  const host = getHost(ctx, hostId);
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
  if (fields.name !== undefined) uniqueName(ctx, fields.name, host.id);
  if (mode !== host.mode && ctx.stores.instances.onHost(host.id).length > 0) {
    throw conflict('host_in_use', 'The host still has instances; release them (and let their teardown finish) before changing its mode.');
  }
  if (login || vm) {
    const current = await hostSecrets(ctx, host.id);
    const { privateKey: _k, passphrase: _p, password: _w, ...vmPart } = current;
    const { vmPrivateKey: _vk, vmPassword: _vw, ...hostPart } = current;
    await ctx.secrets.set(secretKey(host.id), JSON.stringify({ ...(login ? login.secrets : hostPart), ...(vm ? vm.secrets : vmPart) }));
  }
  ctx.stores.macHosts.update(host.id, fields, ctx.now());
  ctx.instances.recheck(host.id);
  return ctx.stores.macHosts.get(host.id)!;
}

/**
 * Refused while an instance is provisioning or ready on it, and while a reachable host still has released VMs to
 * delete (forgetting the host then would leave them on the Mac). A host that is down is let go with its leftovers:
 * the lab owner removing it is the only way they could ever be dropped.
 */
export async function deleteHost(ctx: EngineContext, hostId: string): Promise<void> {
  const host = getHost(ctx, hostId);
  const onHost = ctx.stores.instances.onHost(host.id);
  const active = onHost.filter((i) => i.status === 'provisioning' || i.status === 'ready');
  if (active.length > 0) {
    throw conflict('host_in_use', `${active.length} instance(s) still run on ${host.name}; they must be released first.`);
  }
  if (onHost.length > 0 && ctx.instances.healthOf(host.id).state !== 'down') {
    throw conflict('teardown_pending', `${host.name} is still deleting ${onHost.length} released instance(s); try again in a moment.`);
  }
  ctx.stores.macHosts.remove(host.id);
  await ctx.secrets.delete(secretKey(host.id));
  ctx.instances.forget(host.id);
}

/** Every host with its health and free slots; the instances listed are the caller's organization's only. */
export function fleetHosts(ctx: EngineContext, scope: Scope) {
  return ctx.stores.macHosts.all().map((host) => ({
    host,
    health: ctx.instances.healthOf(host.id),
    freeSlots: ctx.instances.freeSlots(host),
    own: ctx.stores.instances
      .onHost(host.id)
      .filter((i) => i.organizationId === scope.organization.id && (i.status === 'provisioning' || i.status === 'ready'))
      .map((i) => ({ sessionId: i.sessionId, instanceId: i.id })),
  }));
}
