import type { EngineConfig } from '../../src/main/engine/config.js';
import { client, startEngine, type TestEngine } from './engine.js';
import { waitFor } from './lab.js';
import { startMacHost, type MacHostSim } from './mac-host/index.js';

export { sshdOrSkip } from './mac-host/index.js';

/**
 * A lab for Mac instance tests: simulated Macs (real sshd, scripted tart), an engine that checks them often, and
 * the hosts added through the lab administration API.
 */
export interface MacLab {
  engine: TestEngine;
  c: ReturnType<typeof client>;
  /** The lab owner's token. */
  owner: string;
  macs: MacHostSim[];
  hostIds: string[];
  newSession(token?: string, org?: string): Promise<string>;
  create(session: string, token?: string, org?: string): Promise<any>;
  /** Polls GET instance until it has the status, as the spec tells clients to. */
  untilStatus(session: string, instanceId: string, status: string, token?: string, timeoutMs?: number): Promise<any>;
  /** Waits until GET /fleet/hosts shows the host with this health. */
  untilHealth(hostId: string, health: string, timeoutMs?: number): Promise<any>;
  /** Stops the engine and starts a new one on the same data dir; `c` and `owner` then speak to the new one. */
  restart(config?: Partial<EngineConfig>): Promise<void>;
  stop(): Promise<void>;
}

export async function startMacLab(hosts: Array<Record<string, unknown>>, config: Partial<EngineConfig> = {}): Promise<MacLab> {
  const macs: MacHostSim[] = [];
  let engine: TestEngine | undefined;
  try {
    for (let i = 0; i < hosts.length; i++) macs.push(await startMacHost());
    engine = await startEngine({ hostCheckIntervalSeconds: 0.25, ...config });
  } catch (error) {
    for (const mac of macs) await mac.stop();
    throw error;
  }
  const first = client(engine.api);
  const lab: MacLab = {
    engine,
    c: first,
    owner: await first.login(),
    macs,
    hostIds: [],
    async newSession(token = lab.owner, org) {
      const r = await lab.c.call('POST', '/sessions', { token, org });
      if (r.status !== 201) throw new Error(`create session: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body.id;
    },
    async create(session, token = lab.owner, org) {
      const r = await lab.c.call('POST', `/sessions/${session}/instances`, { token, org, body: { os: 'macos' } });
      if (r.status !== 201) throw new Error(`create instance: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body;
    },
    untilStatus(session, instanceId, status, token = lab.owner, timeoutMs = 15_000) {
      let last: unknown;
      return waitFor(`instance ${instanceId} to be ${status}`, async () => {
        const r = await lab.c.call('GET', `/sessions/${session}/instances/${instanceId}`, { token });
        last = r.body;
        if (r.body.status !== status && r.body.status !== 'provisioning' && r.body.status !== 'ready') {
          throw new Error(`instance ${instanceId} is ${JSON.stringify(last)}, waiting for ${status}`);
        }
        return r.body.status === status ? r.body : undefined;
      }, timeoutMs);
    },
    untilHealth(hostId, health, timeoutMs = 10_000) {
      return waitFor(`host ${hostId} to be ${health}`, async () => {
        const r = await lab.c.call('GET', '/fleet/hosts', { token: lab.owner });
        return r.body.data.find((h: { id: string; health: string }) => h.id === hostId && h.health === health);
      }, timeoutMs);
    },
    async restart(more = {}) {
      lab.engine = await lab.engine.restart({ hostCheckIntervalSeconds: 0.25, ...config, ...more });
      lab.c = client(lab.engine.api);
      lab.owner = await lab.c.login();
    },
    async stop() {
      await lab.engine.stop();
      for (const mac of macs) await mac.stop();
    },
  };
  try {
    for (let i = 0; i < hosts.length; i++) {
      const r = await lab.c.call('POST', '/lab/hosts', { token: lab.owner, body: macs[i]!.hostBody(hosts[i]) });
      if (r.status !== 201) throw new Error(`add host: ${r.status} ${JSON.stringify(r.body)}`);
      lab.hostIds.push(r.body.id);
      await lab.untilHealth(r.body.id, 'up');
    }
  } catch (error) {
    await lab.stop();
    throw error;
  }
  return lab;
}
