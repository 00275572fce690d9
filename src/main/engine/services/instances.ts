import { randomUUID } from 'node:crypto';
import { conflict, invalid, notFound } from '../domain/errors.js';
import { MacHost, StepError, type InstanceShell, type TartVm } from '../fleet/macos/host.js';
import type { Stores } from '../store/index.js';
import type { InstanceRow } from '../store/instances.js';
import type { MacHostRow } from '../store/mac-hosts.js';
import { refuseIfEnded } from '../domain/session-state.js';
import { requireRole } from './auth.js';
import type { HostSecretStore } from './host-secrets.js';
import type { Clock, Scope } from './scope.js';
import { Terminals, type SharedTerminal, type TerminalSize } from './terminals.js';

/** What the instance manager reads and writes: sessions (to check), instances and their hosts, and metering. */
export type InstanceStores = Pick<Stores, 'db' | 'sessions' | 'instances' | 'macHosts' | 'usage'>;

export interface InstanceManagerOptions {
  /** Active instances an organization may hold at once, as the lab owner set it now. */
  instanceQuota: () => number;
  /** How long an interactive shell outlives its last viewer. */
  terminalIdleMs: number;
  /** How often each host is checked over SSH. */
  checkIntervalMs: number;
  /** How long a ready instance survives its host being unreachable. */
  graceMs: number;
  log: (message: string) => void;
}

export type HealthState = 'unknown' | 'up' | 'down';

export interface HostHealth {
  state: HealthState;
  message: string | null;
  checkedAt: number | null;
  /** When the host was first seen down in the current outage. */
  downSince: number | null;
}

export interface ExecOutcome {
  exitCode: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  truncated: boolean;
}

export const INSTANCE_ARCH = 'arm64';
/** Tart's published macOS images log in as admin/admin. */
const TART_IMAGE_PASSWORD = 'admin';
const MAX_EXEC_OUTPUT = 4 * 1024 * 1024;
const UNKNOWN: HostHealth = { state: 'unknown', message: null, checkedAt: null, downSince: null };

/** The VM's name on its host: the instance id makes it unique across every lab that might share a Mac. */
export const vmNameOf = (instanceId: string) => `benchtop-${instanceId}`;

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * Mac instances: placement on the lab's hosts, provisioning over SSH (a Tart VM, or the bare host), release and
 * teardown, the hosts' health, and reconciliation with what the hosts run after a restart. Every state lives in
 * SQLite; the checks, timers and in-flight work here are rebuilt from it on start.
 */
export class InstanceManager {
  private readonly health = new Map<string, HostHealth>();
  private readonly checks = new Map<string, Promise<void>>();
  private readonly provisioning = new Map<string, { abort: AbortController; done: Promise<void> }>();
  private readonly tearingDown = new Map<string, Promise<void>>();
  private readonly graceTimers = new Map<string, NodeJS.Timeout>();
  /** Connections handed out by connect(), closed when the engine stops so that no request outlives it. */
  private readonly shells = new Set<InstanceShell>();
  /** Hosts whose instances have been compared with what the host runs since this engine started. */
  private readonly reconciled = new Set<string>();
  /** Ends every SSH conversation in flight when the engine stops. */
  private readonly shutdown = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Interactive shells, shared by their viewers; they close with their instance. */
  private readonly terminals: Terminals;

  constructor(
    private readonly stores: InstanceStores,
    private readonly hostSecrets: Pick<HostSecretStore, 'read'>,
    private readonly now: Clock,
    private readonly options: InstanceManagerOptions,
  ) {
    this.terminals = new Terminals(options.terminalIdleMs);
  }

  /** Starts the periodic host checks; the first check of each host reconciles its instances. */
  start(): void {
    this.stores.instances.settleHostless(this.now());
    this.tick();
  }

  /**
   * Stops checking and abandons in-flight work without recording it as failed: provisioning that was cut short is
   * resumed, and teardown finished, by the next start.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    for (const timer of this.graceTimers.values()) clearTimeout(timer);
    this.graceTimers.clear();
    this.shutdown.abort();
    // Before the connections below close under them, so that viewers learn it is a shutdown, not a lost instance.
    this.terminals.close();
    for (const p of this.provisioning.values()) p.abort.abort();
    for (const shell of this.shells) shell.close();
    await Promise.allSettled([...[...this.provisioning.values()].map((p) => p.done), ...this.checks.values(), ...this.tearingDown.values()]);
  }

  // ---- the API's operations ----

  create(scope: Scope, sessionId: string, body: { os: string }): InstanceRow {
    requireRole(scope.role, 'readwrite');
    const { db, sessions, instances, usage } = this.stores;
    const session = sessions.get(sessionId, scope.organization.id);
    if (!session) throw notFound('session');
    refuseIfEnded(session);
    if (body.os !== 'macos') throw invalid('unsupported_os', `Only macos instances are supported, not "${body.os}".`);
    const id = randomUUID();
    const organizationId = scope.organization.id;
    db.transaction(() => {
      const quota = this.options.instanceQuota();
      if (instances.activeCount(organizationId) >= quota) {
        throw conflict('concurrency_limit', `This organization already has ${quota} active instances, its quota. Release one first.`);
      }
      const host = this.placement();
      const createdAt = instances.insert({
        id,
        sessionId,
        organizationId,
        os: 'macos',
        image: host.baseImage,
        arch: INSTANCE_ARCH,
        cpuCores: host.cpuCores,
        memoryMb: host.memoryMb,
        diskMb: host.diskMb,
        hostId: host.id,
        vmName: vmNameOf(id),
        now: this.now(),
      });
      // Billing runs from createdAt, as the spec says, not from readiness.
      usage.start(organizationId, 'instances', id, createdAt);
    }).immediate();
    const row = instances.get(id)!;
    this.provision(row);
    return row;
  }

  list(scope: Scope, sessionId: string): InstanceRow[] {
    if (!this.stores.sessions.get(sessionId, scope.organization.id)) throw notFound('session');
    return this.stores.instances.ofSessions([sessionId]);
  }

  get(scope: Scope, sessionId: string, instanceId: string): InstanceRow {
    if (!this.stores.sessions.get(sessionId, scope.organization.id)) throw notFound('session');
    const row = this.stores.instances.get(instanceId);
    if (!row || row.sessionId !== sessionId || row.organizationId !== scope.organization.id) throw notFound('instance');
    return row;
  }

  /** An instance of the caller's organization by its id alone, wherever its session: /mcp names no session. */
  find(scope: Scope, instanceId: string): InstanceRow {
    const row = this.stores.instances.get(instanceId);
    if (!row || row.organizationId !== scope.organization.id) throw notFound('instance');
    return row;
  }

  /** Idempotent: billing stops now and teardown runs in the background; a released or failed instance is answered as it is. */
  release(scope: Scope, sessionId: string, instanceId: string): InstanceRow {
    requireRole(scope.role, 'readwrite');
    const row = this.get(scope, sessionId, instanceId);
    const now = this.now();
    if (this.stores.instances.end(row.id, 'released', now)) {
      this.stores.usage.stop(row.id, now);
      this.afterEnd(row.id);
    }
    return this.stores.instances.get(row.id)!;
  }

  /**
   * An SSH connection to a ready instance of the caller's session: the VM (through its host) or the bare host.
   * The caller closes it. exec uses it; so can an interactive terminal.
   */
  async connect(scope: Scope, sessionId: string, instanceId: string): Promise<InstanceShell> {
    return this.shellOf(this.readyInstance(scope, sessionId, instanceId));
  }

  /**
   * The ready instance's interactive shell of that name: the one its viewers share, or a new one of `size`. The
   * checks run on every call, so that joining a running shell needs the same rights as opening one.
   */
  async terminal(scope: Scope, sessionId: string, instanceId: string, name: string, size: TerminalSize): Promise<SharedTerminal> {
    const row = this.readyInstance(scope, sessionId, instanceId);
    return this.terminals.open(row.id, name, size, () => this.shellOf(row));
  }

  private readyInstance(scope: Scope, sessionId: string, instanceId: string): InstanceRow {
    requireRole(scope.role, 'readwrite');
    const row = this.get(scope, sessionId, instanceId);
    if (row.status !== 'ready') throw conflict('instance_not_ready', `That instance is ${row.status}; only a ready instance runs commands.`);
    return row;
  }

  private async shellOf(row: InstanceRow): Promise<InstanceShell> {
    const host = row.hostId ? this.stores.macHosts.get(row.hostId) : undefined;
    if (!host) throw conflict('instance_unreachable', 'The Mac host of that instance was removed from the lab.');
    let shell: InstanceShell;
    try {
      shell = await (await this.macOf(host)).openShell(row.vmName!, row.address);
    } catch (error) {
      throw conflict('instance_unreachable', `Cannot reach the instance: ${messageOf(error)}`);
    }
    if (this.stopped) {
      shell.close();
      throw conflict('instance_unreachable', 'Benchtop is shutting down.');
    }
    this.shells.add(shell);
    shell.ssh.whenClosed(() => this.shells.delete(shell));
    return shell;
  }

  async exec(scope: Scope, sessionId: string, instanceId: string, body: { command: string; timeoutSeconds?: number }): Promise<ExecOutcome> {
    const shell = await this.connect(scope, sessionId, instanceId);
    try {
      const result = await shell.ssh.exec(shell.commandPrefix + body.command, {
        timeoutMs: (body.timeoutSeconds ?? 60) * 1000,
        maxOutputBytes: MAX_EXEC_OUTPUT,
      });
      return { exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr, timedOut: result.timedOut, truncated: result.truncated };
    } catch (error) {
      throw conflict('instance_unreachable', `The instance stopped answering: ${messageOf(error)}`);
    } finally {
      shell.close();
    }
  }

  // ---- hosts ----

  healthOf(hostId: string): HostHealth {
    return this.health.get(hostId) ?? UNKNOWN;
  }

  /** Slots a host can give now: none while it is down; a VM still being torn down holds its slot. */
  freeSlots(host: MacHostRow): number {
    if (this.healthOf(host.id).state === 'down') return 0;
    return Math.max(0, this.capacity(host) - this.stores.instances.onHost(host.id).length);
  }

  /** Checks a host as soon as possible: after it was added or edited. */
  recheck(hostId: string): void {
    if (this.stopped) return;
    const running = this.checks.get(hostId);
    void (running ? running.then(() => this.check(hostId)) : this.check(hostId));
  }

  /** A host was removed: its instances have nothing left to tear down. */
  forget(hostId: string): void {
    this.health.delete(hostId);
    this.reconciled.delete(hostId);
    clearTimeout(this.graceTimers.get(hostId));
    this.graceTimers.delete(hostId);
    this.stores.instances.settleHostless(this.now());
  }

  /** Checks a host over SSH (once at a time per host) and acts on what changed. */
  check(hostId: string): Promise<void> {
    const running = this.checks.get(hostId);
    if (running) return running;
    const done = this.runCheck(hostId).finally(() => this.checks.delete(hostId));
    this.checks.set(hostId, done);
    return done;
  }

  /**
   * A check that starts after this moment. One already running may have passed its SSH exchange before a connection
   * was lost, and would call the host up: it is waited for, and then the host is checked again.
   */
  private async checkAgain(hostId: string): Promise<void> {
    await this.checks.get(hostId);
    await this.check(hostId);
  }

  private tick(): void {
    if (this.stopped) return;
    for (const host of this.stores.macHosts.all()) void this.check(host.id);
    // A zero interval would spin: checks are skipped while one runs, but the timer would not be.
    this.timer = setTimeout(() => this.tick(), Math.max(100, this.options.checkIntervalMs));
    this.timer.unref();
  }

  private async runCheck(hostId: string): Promise<void> {
    const host = this.stores.macHosts.get(hostId);
    if (!host || this.stopped) return;
    const startedAt = this.now();
    let result: Awaited<ReturnType<MacHost['check']>>;
    try {
      result = await (await this.macOf(host)).check(this.shutdown.signal);
    } catch (error) {
      // Only an SSH failure means the Mac is gone; a tart that misbehaves keeps new instances away, nothing more.
      const unreachable = !(error instanceof StepError) || error.connectionFailed;
      if (!this.stopped && this.stores.macHosts.get(hostId)) this.markDown(host, messageOf(error), unreachable);
      return;
    }
    const current = this.stores.macHosts.get(hostId);
    if (this.stopped || !current) return;
    // A check that began before the host was edited says nothing about the edited host's key.
    if (current.updatedAt === host.updatedAt && !current.hostKeySha256) this.stores.macHosts.pinHostKey(host.id, result.hostKey);
    this.markUp(current, result.vms, startedAt);
  }

  private markDown(host: MacHostRow, message: string, unreachable: boolean): void {
    const previous = this.healthOf(host.id);
    const now = this.now();
    const downSince = previous.state === 'down' ? previous.downSince! : now;
    this.health.set(host.id, { state: 'down', message, checkedAt: now, downSince });
    if (previous.state !== 'down') this.options.log(`Mac host ${host.name} is down: ${message}`);
    if (!unreachable) return;
    const rows = this.stores.instances.onHost(host.id);
    for (const row of rows) {
      if (row.status === 'provisioning') this.fail(row.id, `The Mac host ${host.name} went down while the instance was provisioning: ${message}`);
    }
    if (!this.graceTimers.has(host.id) && rows.some((r) => r.status === 'ready')) {
      const timer = setTimeout(() => {
        this.graceTimers.delete(host.id);
        const health = this.healthOf(host.id);
        if (this.stopped || health.state !== 'down') return;
        const seconds = Math.round((this.now() - health.downSince!) / 1000);
        for (const row of this.stores.instances.onHost(host.id)) {
          if (row.status === 'ready') this.fail(row.id, `The Mac host ${host.name} has been unreachable for ${seconds} s: ${health.message}`);
        }
      }, Math.max(0, downSince + this.options.graceMs - now));
      timer.unref();
      this.graceTimers.set(host.id, timer);
    }
  }

  /**
   * The host answers. The first time since start, its instances are reconciled with what it runs: provisioning cut
   * short by a restart resumes, a ready instance whose VM is gone fails. Every time, released and failed instances
   * still on it are torn down, and (tart) a ready instance whose VM stopped is failed.
   */
  private markUp(host: MacHostRow, vms: TartVm[] | null, checkStartedAt: number): void {
    const previous = this.healthOf(host.id);
    this.health.set(host.id, { state: 'up', message: null, checkedAt: this.now(), downSince: null });
    if (previous.state === 'down') this.options.log(`Mac host ${host.name} is back`);
    clearTimeout(this.graceTimers.get(host.id));
    this.graceTimers.delete(host.id);
    const first = !this.reconciled.has(host.id);
    this.reconciled.add(host.id);
    const running = vms && new Map(vms.map((vm) => [vm.name, vm.running]));
    for (const row of this.stores.instances.onHost(host.id)) {
      if (row.status === 'provisioning') {
        if (!this.provisioning.has(row.id)) this.provision(row, true);
      } else if (row.status === 'ready') {
        // Only what was ready before the listing began can be judged by it.
        if (running && row.readyAt! < checkStartedAt && running.get(row.vmName!) !== true) {
          this.fail(
            row.id,
            first
              ? `Its VM ${row.vmName} was not running on ${host.name} when Benchtop started again.`
              : `Its VM ${row.vmName} stopped running on ${host.name}.`,
          );
        }
      } else {
        this.teardown(row.id);
      }
    }
  }

  // ---- provisioning, failure, teardown ----

  private capacity(host: MacHostRow): number {
    return host.mode === 'bare' ? 1 : host.maxInstances;
  }

  /** The host with the most free slots (by name on a tie), or 409 no_capacity. */
  private placement(): MacHostRow {
    const hosts = this.stores.macHosts.all();
    let best: MacHostRow | undefined;
    let bestFree = 0;
    for (const host of hosts) {
      const free = this.freeSlots(host);
      if (free > bestFree) {
        best = host;
        bestFree = free;
      }
    }
    if (best) return best;
    if (hosts.length === 0) {
      throw conflict('no_capacity', 'This lab has no Mac host yet; the lab owner adds them (lab settings, or the lab hosts API).');
    }
    const down = hosts.filter((h) => this.healthOf(h.id).state === 'down').length;
    throw conflict(
      'no_capacity',
      `Every Mac host is busy${down ? ` or down (${down} of ${hosts.length} down)` : ''}. Release an instance, or try again later.`,
    );
  }

  private provision(row: InstanceRow, resume = false): void {
    if (this.stopped || this.provisioning.has(row.id)) return;
    const abort = new AbortController();
    const done = this.runProvision(row, abort.signal, resume).finally(() => this.provisioning.delete(row.id));
    this.provisioning.set(row.id, { abort, done });
  }

  private async runProvision(row: InstanceRow, signal: AbortSignal, resume: boolean): Promise<void> {
    const host = row.hostId ? this.stores.macHosts.get(row.hostId) : undefined;
    if (!host) return this.fail(row.id, 'Its Mac host was removed from the lab.');
    try {
      const mac = await this.macOf(host);
      const image = { baseImage: row.image, machine: { cpuCores: row.cpuCores, memoryMb: row.memoryMb, diskMb: row.diskMb } };
      const { address } = await mac.provision(row.vmName!, image, signal, this.shutdown.signal, resume);
      if (this.stopped || signal.aborted) return;
      if (this.stores.instances.markReady(row.id, this.now(), address)) {
        this.options.log(`instance ${row.id} is ready on ${host.name}`);
      }
    } catch (error) {
      if (this.stopped || signal.aborted) return;
      // A lost connection may be the host going down: a check tells, and then says so in the instance's message.
      if (error instanceof StepError && error.connectionFailed) await this.checkAgain(host.id);
      if (this.stopped) return;
      const why = error instanceof StepError ? `${error.step} failed on ${host.name}: ${error.why}` : `Provisioning failed on ${host.name}: ${messageOf(error)}`;
      this.fail(row.id, why);
    }
  }

  /** provisioning or ready to failed: billing stops now, and the instance is torn down. */
  private fail(instanceId: string, message: string): void {
    const now = this.now();
    if (!this.stores.instances.end(instanceId, 'failed', now, message)) return;
    this.stores.usage.stop(instanceId, now);
    this.options.log(`instance ${instanceId} failed: ${message}`);
    this.afterEnd(instanceId);
  }

  private afterEnd(instanceId: string): void {
    this.provisioning.get(instanceId)?.abort.abort();
    this.terminals.end(instanceId, 'instance_released');
    this.teardown(instanceId);
  }

  /** Deletes the VM (or clears the bare host's work dir) once provisioning has stopped; retried after each check until done. */
  private teardown(instanceId: string): void {
    if (this.stopped || this.tearingDown.has(instanceId)) return;
    const done = this.runTeardown(instanceId).finally(() => this.tearingDown.delete(instanceId));
    this.tearingDown.set(instanceId, done);
  }

  private async runTeardown(instanceId: string): Promise<void> {
    await this.provisioning.get(instanceId)?.done;
    const { instances, macHosts } = this.stores;
    const row = instances.get(instanceId);
    if (!row || row.tornDownAt !== null || this.stopped) return;
    const host = row.hostId ? macHosts.get(row.hostId) : undefined;
    if (!host) {
      instances.markTornDown(row.id, this.now());
      return;
    }
    // An unreachable host is tried again once a check finds it up.
    if (this.healthOf(host.id).state === 'down') return;
    try {
      await (await this.macOf(host)).teardown(row.vmName!, this.shutdown.signal);
      if (this.stopped) return;
      instances.markTornDown(row.id, this.now());
    } catch (error) {
      if (!this.stopped) this.options.log(`tearing down instance ${row.id} on ${host.name} failed, retrying after the next check: ${messageOf(error)}`);
    }
  }

  /** The host's driver, with its credentials read from the secret store. */
  private async macOf(host: MacHostRow): Promise<MacHost> {
    const secrets = await this.hostSecrets.read(host.id);
    const vmLogin =
      host.vmAuth === 'privateKey'
        ? { privateKey: secrets.vmPrivateKey }
        : { password: host.vmAuth === 'password' ? secrets.vmPassword : TART_IMAGE_PASSWORD };
    return new MacHost({
      name: host.name,
      endpoint: {
        host: host.address,
        port: host.port,
        username: host.username,
        ...(host.auth === 'privateKey' ? { privateKey: secrets.privateKey, passphrase: secrets.passphrase } : { password: secrets.password }),
      },
      hostKey: host.hostKeySha256,
      mode: host.mode,
      vm: { port: host.vmPort, username: host.vmUsername, ...vmLogin },
      workDir: host.workDir,
    });
  }
}
