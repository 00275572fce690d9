import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode } from '../support/engine.js';
import { waitFor } from '../support/lab.js';
import { sshdOrSkip, startMacLab, type MacLab } from '../support/mac-lab.js';

const hasSshd = sshdOrSkip();

describe.skipIf(!hasSshd)('a Mac host that goes down', () => {
  let lab: MacLab;

  beforeAll(async () => {
    lab = await startMacLab([{ name: 'flaky-mac' }], { hostGraceSeconds: 2 });
  });
  afterAll(() => lab?.stop());

  it('fails its provisioning instances at once and its ready ones after the grace period; teardown waits for it to return', async () => {
    const mac = lab.macs[0]!;
    const [hostId] = lab.hostIds;
    const session = await lab.newSession();
    const ready = await lab.create(session);
    await lab.untilStatus(session, ready.id, 'ready');

    // The second instance hangs at tart ip when the Mac dies.
    mac.holdIp(true);
    const stuck = await lab.create(session);
    await waitFor('provisioning to reach tart ip', () => mac.calls().some((line) => line === `ip --wait 60 benchtop-${stuck.id}`));
    const killedAt = Date.now();
    mac.kill();

    const failed = await lab.untilStatus(session, stuck.id, 'failed');
    // The reason is the failed check's: refused, or cut off mid-check when the kill landed during one.
    expect(failed.statusMessage).toMatch(/^The Mac host flaky-mac went down while the instance was provisioning: \S.+/);
    const down = await waitFor('the host to refuse connections', async () => {
      const host = (await lab.c.call('GET', '/fleet/hosts', { token: lab.owner })).body.data.find((h: { id: string }) => h.id === hostId);
      return host.healthMessage?.includes('connection refused') ? host : undefined;
    });
    expect(down).toMatchObject({ health: 'down', freeSlots: 0, healthMessage: `SSH to the host failed: connection refused at 127.0.0.1:${mac.port}` });
    const full = await lab.c.call('POST', `/sessions/${session}/instances`, { token: lab.owner, body: { os: 'macos' } });
    expect(full.status).toBe(409);
    expect(errorCode(full)).toBe('no_capacity');

    // The ready instance survives the grace period's first part, then fails.
    expect((await lab.c.call('GET', `/sessions/${session}/instances/${ready.id}`, { token: lab.owner })).body.status).toBe('ready');
    const lost = await lab.untilStatus(session, ready.id, 'failed', lab.owner, 10_000);
    expect(Date.now() - killedAt).toBeGreaterThanOrEqual(1500);
    expect(lost.statusMessage).toMatch(/^The Mac host flaky-mac has been unreachable for \d+ s: /);
    expect(mac.vms().map((vm) => vm.name).sort()).toEqual([`benchtop-${ready.id}`, `benchtop-${stuck.id}`].sort());

    // Back up: both VMs are torn down, and the host serves again.
    mac.holdIp(false);
    await mac.restart();
    await lab.untilHealth(hostId!, 'up');
    await waitFor('both VMs to be deleted', () => mac.vms().length === 0);
    await waitFor('both slots to be free', async () => (await lab.c.call('GET', '/fleet/hosts', { token: lab.owner })).body.data[0].freeSlots === 2);
    const again = await lab.create(session);
    await lab.untilStatus(session, again.id, 'ready');
    await lab.c.call('POST', `/sessions/${session}/instances/${again.id}/release`, { token: lab.owner });
  });

  it('keeps a ready instance that comes back within the grace period', async () => {
    const mac = lab.macs[0]!;
    const session = await lab.newSession();
    await waitFor('a free slot', async () => (await lab.c.call('GET', '/fleet/hosts', { token: lab.owner })).body.data[0].freeSlots === 2);
    const instance = await lab.create(session);
    await lab.untilStatus(session, instance.id, 'ready');
    // sshd goes away for a moment but the VM keeps running, as on a Mac whose network dropped.
    mac.kill();
    await lab.untilHealth(lab.hostIds[0]!, 'down');
    await mac.restart();
    await lab.untilHealth(lab.hostIds[0]!, 'up');
    await new Promise((r) => setTimeout(r, 2500));
    expect((await lab.c.call('GET', `/sessions/${session}/instances/${instance.id}`, { token: lab.owner })).body.status).toBe('ready');
    const exec = await lab.c.call('POST', `/sessions/${session}/instances/${instance.id}/exec`, { token: lab.owner, body: { command: 'echo still here' } });
    expect(exec.body).toMatchObject({ exitCode: 0, stdout: 'still here\n' });
    await lab.c.call('POST', `/sessions/${session}/instances/${instance.id}/release`, { token: lab.owner });
  });

  it('pins the host key on first contact and refuses a host whose key changed, until told to trust it', async () => {
    const mac = lab.macs[0]!;
    const [hostId] = lab.hostIds;
    const pinned = (await lab.c.call('GET', `/lab/hosts/${hostId}`, { token: lab.owner })).body.hostKeySha256;
    expect(pinned).toMatch(/^SHA256:/);
    await mac.rekey();
    const refused = await waitFor('the host to be refused', async () => {
      const host = (await lab.c.call('GET', `/lab/hosts/${hostId}`, { token: lab.owner })).body;
      return host.health === 'down' && host.healthMessage?.includes('host key') ? host : undefined;
    });
    expect(refused.healthMessage).toMatch(new RegExp(`the host key of 127\\.0\\.0\\.1:${mac.port} changed: expected ${pinned.replace(/[+/]/g, '\\$&')}, got SHA256:`));
    const session = await lab.newSession();
    expect((await lab.c.call('POST', `/sessions/${session}/instances`, { token: lab.owner, body: { os: 'macos' } })).status).toBe(409);

    const trusted = await lab.c.call('PATCH', `/lab/hosts/${hostId}`, { token: lab.owner, body: { hostKeySha256: null } });
    expect(trusted.body.hostKeySha256).toBeNull();
    await lab.untilHealth(hostId!, 'up');
    const repinned = (await lab.c.call('GET', `/lab/hosts/${hostId}`, { token: lab.owner })).body.hostKeySha256;
    expect(repinned).toMatch(/^SHA256:/);
    expect(repinned).not.toBe(pinned);
  });
});
