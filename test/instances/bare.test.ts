import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCode } from '../support/engine.js';
import { waitFor } from '../support/lab.js';
import { sshdOrSkip, startMacLab, type MacLab } from '../support/mac-lab.js';

const hasSshd = sshdOrSkip();

describe.skipIf(!hasSshd)('Mac instances on a bare host (real sshd)', () => {
  let lab: MacLab;
  let workDir: string;

  beforeAll(async () => {
    lab = await startMacLab([{ name: 'mac-mini', mode: 'bare', baseImage: 'macOS 15.1 (bare host)' }], { instanceConcurrencyQuota: 2 });
    // The default work dir, relative to the SSH user's home (the simulated Mac's own temp home).
    workDir = join(lab.macs[0]!.home, 'benchtop-work');
  });
  afterAll(() => lab?.stop());

  it('is the host itself: ready once SSH works, one instance at a time, its work dir cleared on release', async () => {
    const session = await lab.newSession();
    const instance = await lab.create(session);
    expect(instance).toMatchObject({ status: 'provisioning', image: 'macOS 15.1 (bare host)', machine: { arch: 'arm64', cpuCores: 4, memoryMb: 8192, diskMb: 61_440 } });
    const ready = await lab.untilStatus(session, instance.id, 'ready');
    expect(ready.readyAt).not.toBeNull();
    expect(existsSync(workDir)).toBe(true);
    // No VM is involved.
    expect(lab.macs[0]!.calls()).toEqual([]);

    // One at a time: the host has no second slot, whatever the quota says.
    const second = await lab.c.call('POST', `/sessions/${session}/instances`, { token: lab.owner, body: { os: 'macos' } });
    expect(second.status).toBe(409);
    expect(errorCode(second)).toBe('no_capacity');
    const fleet = (await lab.c.call('GET', '/fleet/hosts', { token: lab.owner })).body.data[0];
    expect(fleet).toMatchObject({ mode: 'bare', maxInstances: 1, freeSlots: 0, instances: [{ sessionId: session, instanceId: instance.id }] });

    // exec runs on the host, in the work dir.
    const exec = await lab.c.call('POST', `/sessions/${session}/instances/${instance.id}/exec`, {
      token: lab.owner,
      body: { command: 'pwd; echo built > artifact.txt' },
    });
    expect(exec.status).toBe(200);
    expect(exec.body).toMatchObject({ exitCode: 0, stdout: `${workDir}\n`, stderr: '' });
    expect(existsSync(join(workDir, 'artifact.txt'))).toBe(true);

    const released = await lab.c.call('POST', `/sessions/${session}/instances/${instance.id}/release`, { token: lab.owner });
    expect(released.status).toBe(202);
    expect(released.body.status).toBe('released');
    await waitFor('the work dir to be cleared', () => !existsSync(workDir));
    await waitFor('the host to be free', async () => (await lab.c.call('GET', '/fleet/hosts', { token: lab.owner })).body.data[0].freeSlots === 1);

    // The next instance gets a fresh, empty work dir.
    const next = await lab.create(session);
    await lab.untilStatus(session, next.id, 'ready');
    writeFileSync(join(workDir, 'left-over'), '');
    await lab.c.call('POST', `/sessions/${session}/instances/${next.id}/release`, { token: lab.owner });
    await waitFor('the work dir to be cleared', () => !existsSync(workDir));
  });
});
