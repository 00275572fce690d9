import Database from 'better-sqlite3';
import { type } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode } from '../support/engine.js';
import { waitFor } from '../support/lab.js';
import { sshdOrSkip, startMacLab, type MacLab } from '../support/mac-lab.js';

const hasSshd = sshdOrSkip();
const UNKNOWN = '6f1c1a52-52a8-4a8e-9a55-1b5f3c9f0000';

describe.skipIf(!hasSshd)('Mac instances on a Tart host (real sshd, scripted tart)', () => {
  let lab: MacLab;
  let mac: MacLab['macs'][number];

  beforeAll(async () => {
    lab = await startMacLab([{ name: 'mac-studio' }], { instanceConcurrencyQuota: 2 });
    mac = lab.macs[0]!;
  });
  afterAll(() => lab?.stop());

  const vmOf = (instanceId: string) => mac.vms().find((vm) => vm.name === `benchtop-${instanceId}`);
  const release = (session: string, id: string, token = lab.owner) => lab.c.call('POST', `/sessions/${session}/instances/${id}/release`, { token });
  /**
   * The VM is gone from the host, and the engine has given its slot back. An instance released while its clone runs
   * has no VM yet but a half-built one (`.benchtop-<id>.partial`), which lands and is then deleted: both must be gone.
   * Counting only the finished VM, a full run once found two clones still under way, whose rows held both slots while
   * the slot count agreed with the two partial VMs, and the next instance was refused no_capacity.
   */
  const tornDown = async (id: string) => {
    await waitFor(`the VM of ${id} to be deleted`, () => !mac.vms().some((vm) => vm.name === `benchtop-${id}` || vm.name === `.benchtop-${id}.partial`));
    await waitFor('every slot to be free', async () => {
      const host = (await lab.c.call('GET', '/fleet/hosts', { token: lab.owner })).body.data[0];
      return host.freeSlots === host.maxInstances - mac.vms().length;
    });
  };

  it('allocates: 201 provisioning at once with image and machine, then ready once a command ran inside the VM', async () => {
    const session = await lab.newSession();
    const r = await lab.c.call('POST', `/sessions/${session}/instances`, { token: lab.owner, body: { os: 'macos' } });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      status: 'provisioning',
      os: 'macos',
      image: 'ghcr.io/cirruslabs/macos-sequoia-base:latest',
      machine: { arch: 'arm64', cpuCores: 4, memoryMb: 8192, diskMb: 61_440 },
      createdAt: expect.any(String),
      readyAt: null,
      releasedAt: null,
    });
    const ready = await lab.untilStatus(session, r.body.id, 'ready');
    expect(Date.parse(ready.readyAt)).toBeGreaterThanOrEqual(Date.parse(r.body.createdAt));
    expect(ready.statusMessage).toBeUndefined();

    // The VM was cloned from the base image, sized, given a random MAC and started; then reached through the host.
    const vm = vmOf(r.body.id)!;
    expect(vm).toMatchObject({ running: true, source: 'ghcr.io/cirruslabs/macos-sequoia-base:latest', cpu: 4, memoryMb: 8192, diskGb: 60 });
    expect(vm.mac).not.toBe('0e:00:00:00:00:01');
    const calls = mac.calls().filter((line) => line.includes(`benchtop-${r.body.id}`));
    expect(calls.slice(0, 3)).toEqual([
      `clone ghcr.io/cirruslabs/macos-sequoia-base:latest benchtop-${r.body.id}`,
      `set benchtop-${r.body.id} --cpu 4 --memory 8192 --disk-size 60`,
      `set benchtop-${r.body.id} --random-mac`,
    ]);
    // `tart run` is detached, so it may log itself after `tart ip` has begun waiting for it.
    expect(calls.slice(3).sort()).toEqual([`ip --wait 60 benchtop-${r.body.id}`, `run --no-graphics benchtop-${r.body.id}`]);

    // The list (newest first) and the session view show it too.
    const second = await lab.create(session);
    const listed = await lab.c.call('GET', `/sessions/${session}/instances`, { token: lab.owner });
    expect(listed.status).toBe(200);
    expect(listed.body.object).toBe('list');
    expect(listed.body.nextCursor).toBeUndefined();
    expect(listed.body.data.map((i: { id: string }) => i.id)).toEqual([second.id, r.body.id]);
    const view = await lab.c.call('GET', `/sessions/${session}`, { token: lab.owner });
    expect(view.body.instances.map((i: { id: string }) => i.id)).toEqual([second.id, r.body.id]);
    await lab.untilStatus(session, second.id, 'ready');

    // Release: 202 with releasedAt at once; idempotent; teardown stops and deletes the VM afterwards.
    const released = await release(session, r.body.id);
    expect(released.status).toBe(202);
    expect(released.body).toMatchObject({ id: r.body.id, status: 'released', readyAt: ready.readyAt });
    expect(released.body.releasedAt).not.toBeNull();
    const again = await release(session, r.body.id);
    expect(again.status).toBe(202);
    expect(again.body.releasedAt).toBe(released.body.releasedAt);
    await tornDown(r.body.id);
    const teardown = mac.calls().filter((line) => line.includes(`benchtop-${r.body.id}`)).slice(5);
    expect(teardown).toEqual([`stop benchtop-${r.body.id}`, `delete benchtop-${r.body.id}`]);
    expect((await release(session, second.id)).status).toBe(202);
    await tornDown(second.id);

    // Metering: one ledger row from createdAt to releasedAt.
    const db = new Database(join(lab.engine.dataDir, 'benchtop.db'), { readonly: true });
    const rows = db.prepare("SELECT resource, started_at AS startedAt, ended_at AS endedAt FROM usage_ledger WHERE subject_id = ?").all(r.body.id);
    db.close();
    expect(rows).toEqual([{ resource: 'instances', startedAt: Date.parse(r.body.createdAt), endedAt: Date.parse(released.body.releasedAt) }]);
  });

  it('exec runs a command inside the VM and answers its exit code, stdout and stderr', async () => {
    const session = await lab.newSession();
    const instance = await lab.create(session);
    const early = await lab.c.call('POST', `/sessions/${session}/instances/${instance.id}/exec`, { token: lab.owner, body: { command: 'true' } });
    if (early.status !== 200) {
      expect(early.status).toBe(409);
      expect(errorCode(early)).toBe('instance_not_ready');
    }
    await lab.untilStatus(session, instance.id, 'ready');
    const exec = (body: unknown) => lab.c.call('POST', `/sessions/${session}/instances/${instance.id}/exec`, { token: lab.owner, body });
    const r = await exec({ command: 'echo "hello from $(uname -s)"; echo oops >&2; exit 3' });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ exitCode: 3, stdout: `hello from ${type()}\n`, stderr: 'oops\n', timedOut: false, truncated: false });
    const slow = await exec({ command: 'sleep 30', timeoutSeconds: 1 });
    expect(slow.body).toMatchObject({ exitCode: null, timedOut: true });
    expect((await exec({ command: '' })).status).toBe(400);
    expect((await exec({ command: 'true', timeoutSeconds: 0 })).status).toBe(400);
    expect((await exec({ command: 'true', extra: 1 })).status).toBe(400);
    await release(session, instance.id);
    const after = await exec({ command: 'true' });
    expect(after.status).toBe(409);
    expect(errorCode(after)).toBe('instance_not_ready');
    await tornDown(instance.id);
  });

  it('a failing clone fails the instance with a statusMessage naming the step, and stops its billing', async () => {
    mac.failClone('Error: failed to pull ghcr.io/cirruslabs/macos-sequoia-base:latest: unauthorized');
    try {
      const session = await lab.newSession();
      const instance = await lab.create(session);
      const failed = await lab.untilStatus(session, instance.id, 'failed');
      expect(failed.statusMessage).toMatch(/^tart clone failed on mac-studio: .*failed to pull .*unauthorized/);
      expect(failed.readyAt).toBeNull();
      expect(failed.releasedAt).not.toBeNull();
      // Release of a failed instance answers it as it is.
      const r = await release(session, instance.id);
      expect(r.status).toBe(202);
      expect(r.body).toMatchObject({ status: 'failed', releasedAt: failed.releasedAt, statusMessage: failed.statusMessage });
      // It holds nothing: the quota and the host's slots are free again.
      await waitFor('the host to have both slots free', async () =>
        (await lab.c.call('GET', '/fleet/hosts', { token: lab.owner })).body.data[0].freeSlots === 2);
    } finally {
      mac.failClone(null);
    }
  });

  it('a release during tart clone deletes the clone once it lands, so no VM is left on the Mac; the host cannot be removed meanwhile', async () => {
    mac.slowClone(1.5);
    try {
      const session = await lab.newSession();
      const instance = await lab.create(session);
      await waitFor('tart clone to start', () => mac.calls().some((c) => c.startsWith('clone ') && c.includes(instance.id)));
      // Its half-built VM, renamed into place when the clone lands.
      const cloning = () => mac.vms().some((vm) => vm.name === `.benchtop-${instance.id}.partial`);
      await waitFor('the clone to begin its VM', cloning);
      const removeHost = () => lab.c.call('DELETE', `/lab/hosts/${lab.hostIds[0]}`, { token: lab.owner });
      let refused = await removeHost();
      expect([refused.status, errorCode(refused)]).toEqual([409, 'host_in_use']);
      expect((await release(session, instance.id)).body.status).toBe('released');
      // Released, but its VM is still to be deleted: forgetting the host now would leave the VM on the Mac.
      refused = await removeHost();
      expect([refused.status, errorCode(refused)]).toEqual([409, 'teardown_pending']);
      // Past the end of the clone that was under way (its half-built VM renamed into place): had it been abandoned, its
      // VM would be there for good. Waiting for the clone itself, not a fixed time, holds on a loaded machine too.
      await waitFor('the clone under way to land', () => !cloning());
      await tornDown(instance.id);
      expect(vmOf(instance.id)).toBeUndefined();
    } finally {
      mac.slowClone(null);
    }
  });

  it('409 concurrency_limit past the quota, and 409 no_capacity when no host has a free slot', async () => {
    const session = await lab.newSession();
    const a = await lab.create(session);
    const b = await lab.create(session);
    const over = await lab.c.call('POST', `/sessions/${session}/instances`, { token: lab.owner, body: { os: 'macos' } });
    expect(over.status).toBe(409);
    expect(errorCode(over)).toBe('concurrency_limit');

    // Another organization has its own quota, but the host's two slots are taken.
    const other = await lab.c.signup('capacity@lab.test');
    const theirs = await lab.newSession(other.token);
    const full = await lab.c.call('POST', `/sessions/${theirs}/instances`, { token: other.token, body: { os: 'macos' } });
    expect(full.status).toBe(409);
    expect(errorCode(full)).toBe('no_capacity');
    const fleet = (await lab.c.call('GET', '/fleet/hosts', { token: other.token })).body.data;
    expect(fleet).toEqual([expect.objectContaining({ name: 'mac-studio', health: 'up', maxInstances: 2, freeSlots: 0, instances: [] })]);
    expect(JSON.stringify(fleet)).not.toContain(a.id);
    expect(fleet[0].address).toBeUndefined();
    const mine = (await lab.c.call('GET', '/fleet/hosts', { token: lab.owner })).body.data[0];
    expect(mine.instances).toEqual(expect.arrayContaining([{ sessionId: session, instanceId: a.id }, { sessionId: session, instanceId: b.id }]));

    // A released instance frees the quota at once, and its slot once the VM is deleted.
    await release(session, a.id);
    await release(session, b.id);
    await tornDown(a.id);
    await tornDown(b.id);
    const served = await lab.c.call('POST', `/sessions/${theirs}/instances`, { token: other.token, body: { os: 'macos' } });
    expect(served.status).toBe(201);
    await lab.untilStatus(theirs, served.body.id, 'ready', other.token);
    await release(theirs, served.body.id, other.token);
    await tornDown(served.body.id);
  });

  it('answers only the statuses the spec declares: 400, 401, 403, 404', async () => {
    const session = await lab.newSession();
    const post = (body: unknown, token = lab.owner, s = session) => lab.c.call('POST', `/sessions/${s}/instances`, { token, body });
    const linux = await post({ os: 'linux' });
    expect(linux.status).toBe(400);
    expect(errorCode(linux)).toBe('unsupported_os');
    expect((await post({})).status).toBe(400);
    expect((await post({ os: 'macos', arch: 'x86_64' })).status).toBe(400);
    expect((await lab.c.call('POST', `/sessions/${session}/instances`, { token: lab.owner, raw: '{' })).status).toBe(400);
    const missing = await post({ os: 'macos' }, lab.owner, UNKNOWN);
    expect(missing.status).toBe(404);
    expect(errorCode(missing)).toBe('session_not_found');
    expect((await lab.c.call('GET', `/sessions/${UNKNOWN}/instances`, { token: lab.owner })).status).toBe(404);
    expect((await lab.c.call('GET', `/sessions/${session}/instances/${UNKNOWN}`, { token: lab.owner })).status).toBe(404);
    expect((await lab.c.call('GET', `/sessions/${session}/instances/not-a-uuid`, { token: lab.owner })).status).toBe(404);
    expect((await release(session, UNKNOWN)).status).toBe(404);
    for (const [method, path] of [
      ['GET', `/sessions/${session}/instances`],
      ['POST', `/sessions/${session}/instances`],
      ['GET', `/sessions/${session}/instances/${UNKNOWN}`],
      ['POST', `/sessions/${session}/instances/${UNKNOWN}/release`],
      ['POST', `/sessions/${session}/instances/${UNKNOWN}/exec`],
    ] as const) {
      expect((await lab.c.call(method, path, { body: method === 'POST' ? {} : undefined })).status, `${method} ${path}`).toBe(401);
    }

    // A read-only member sees instances but cannot allocate, release or exec.
    const org = await lab.c.createOrganization(lab.owner, 'Mac readers');
    const reader = await lab.c.signup('reader@lab.test');
    await lab.c.addMember(lab.owner, org, reader.token, 'reader@lab.test', 'readonly');
    const shared = await lab.newSession(lab.owner, org);
    const instance = await lab.create(shared, lab.owner, org);
    const denied = await lab.c.call('POST', `/sessions/${shared}/instances`, { token: reader.token, org, body: { os: 'macos' } });
    expect(denied.status).toBe(403);
    expect(errorCode(denied)).toBe('insufficient_role');
    expect((await lab.c.call('GET', `/sessions/${shared}/instances/${instance.id}`, { token: reader.token, org })).status).toBe(200);
    expect((await lab.c.call('POST', `/sessions/${shared}/instances/${instance.id}/release`, { token: reader.token, org })).status).toBe(403);
    expect((await lab.c.call('POST', `/sessions/${shared}/instances/${instance.id}/exec`, { token: reader.token, org, body: { command: 'true' } })).status).toBe(403);
    // Not a member of the organization: 403.
    const stranger = await lab.c.signup('stranger@lab.test');
    expect((await lab.c.call('GET', `/sessions/${shared}/instances`, { token: stranger.token, org })).status).toBe(403);
    await lab.c.call('POST', `/sessions/${shared}/instances/${instance.id}/release`, { token: lab.owner, org });
    await tornDown(instance.id);
  });

  it('hides one organization\'s instances from another: 404 on every operation', async () => {
    const session = await lab.newSession();
    const instance = await lab.create(session);
    await lab.untilStatus(session, instance.id, 'ready');
    const other = await lab.c.signup('other@lab.test');
    const key = await lab.c.createKey(lab.owner);
    const paths: Array<[string, string, unknown?]> = [
      ['GET', `/sessions/${session}/instances`],
      ['POST', `/sessions/${session}/instances`, { os: 'macos' }],
      ['GET', `/sessions/${session}/instances/${instance.id}`],
      ['POST', `/sessions/${session}/instances/${instance.id}/release`],
      ['POST', `/sessions/${session}/instances/${instance.id}/exec`, { command: 'true' }],
    ];
    for (const [method, path, body] of paths) {
      const r = await lab.c.call(method, path, { token: other.token, body });
      expect(r.status, `${method} ${path}`).toBe(404);
    }
    // An instance id under another session, even of the caller's own organization, is not found either.
    const theirs = await lab.newSession(other.token);
    expect((await lab.c.call('GET', `/sessions/${theirs}/instances/${instance.id}`, { token: other.token })).status).toBe(404);
    const mine = await lab.newSession();
    expect((await lab.c.call('GET', `/sessions/${mine}/instances/${instance.id}`, { token: lab.owner })).status).toBe(404);
    expect((await lab.c.call('GET', `/sessions/${session}`, { token: other.token })).status).toBe(404);
    // An organization (or account) with an active instance cannot be deleted: its VM would be left running.
    const org = await lab.c.createOrganization(lab.owner, 'Short-lived');
    const orgSession = await lab.newSession(lab.owner, org);
    const held = await lab.create(orgSession, lab.owner, org);
    const refused = await lab.c.call('DELETE', `/organizations/${org}`, { token: lab.owner });
    expect(refused.status).toBe(409);
    expect(errorCode(refused)).toBe('instance_allocated');
    await lab.c.call('POST', `/sessions/${orgSession}/instances/${held.id}/release`, { token: lab.owner, org });
    expect((await lab.c.call('DELETE', `/organizations/${org}`, { token: lab.owner })).status).toBe(204);
    await tornDown(held.id);

    // The owner's API key works on it, as every member's would.
    expect((await lab.c.call('GET', `/sessions/${session}/instances/${instance.id}`, { token: key })).body.status).toBe('ready');
    expect((await release(session, instance.id, key)).status).toBe(202);
    await tornDown(instance.id);
  });
});

describe.skipIf(!hasSshd)('Apple\'s limit of two running VMs per Mac', () => {
  let lab: MacLab;
  beforeAll(async () => {
    // A host configured beyond what macOS allows: the third VM's tart run refuses.
    lab = await startMacLab([{ name: 'over-committed', maxInstances: 3 }], { instanceConcurrencyQuota: 3 });
  });
  afterAll(() => lab?.stop());

  it('fails the third instance with tart run\'s own words, quickly', async () => {
    const session = await lab.newSession();
    const a = await lab.create(session);
    const b = await lab.create(session);
    await lab.untilStatus(session, a.id, 'ready');
    await lab.untilStatus(session, b.id, 'ready');
    const started = Date.now();
    const c = await lab.create(session);
    const failed = await lab.untilStatus(session, c.id, 'failed');
    expect(failed.statusMessage).toMatch(/^tart run failed on over-committed: .*The number of VMs exceeds the system limit/);
    // Told apart from a slow boot: not after tart ip's 60 s wait.
    expect(Date.now() - started).toBeLessThan(10_000);
    await waitFor('the failed VM to be deleted', () => !lab.macs[0]!.vms().some((vm) => vm.name === `benchtop-${c.id}`));
    expect(lab.macs[0]!.vms().filter((vm) => vm.running)).toHaveLength(2);
  });
});
