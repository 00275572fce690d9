/**
 * Target: the engine adds less than 300 ms to bringing a Tart instance up. Measured from sending POST
 * /sessions/{id}/instances to the first GET that shows it ready (polled every 10 ms), minus the baseline: the same SSH
 * commands the engine runs (tart clone, set, set --random-mac, run detached with its exit watcher, ip --wait, a jump
 * into the VM and `true` there), sent directly with ssh2 to the same sshd and scripted tart, in this process. What
 * is left is the engine's own work: the API, SQLite, reading the host's secrets, its SSH layer, and the time between
 * a step's end and the next step's start. Runs alternate; each kind runs ROUNDS times after a warm-up of each.
 * The scripted `tart ip` looks for the VM every 100 ms, so any run of either kind may take 100 ms more, at random:
 * medians jump by that much from run to run, so the figure is the difference of the means, over many rounds.
 */
import type { Client } from 'ssh2';
import type { MacHostSim } from '../test/support/mac-host/index.js';
import { allocateReady, hostLogin, jumpToVm, releaseAndWait, sshConnect, sshExec, startMacLab } from './support/mac-lab.js';
import { detail, fmtMs, fmtRatio, median, type Benchmark } from './support/report.js';
import { sized } from './support/smoke.js';

const ROUNDS = sized(21, 1);
/** Round 0 warms both up: the first SSH handshakes, the engine's first statements. */
const FIRST_ROUND = sized(0, 1);
const TARGET_OVERHEAD_MS = 300;
/** What the engine puts before every step's command: where Homebrew puts tart on a Mac. */
const WITH_PATH = 'export PATH="$PATH:/opt/homebrew/bin:/usr/local/bin"; ';
const BASE_IMAGE = 'ghcr.io/cirruslabs/macos-sequoia-base:latest';

async function step(client: Client, command: string): Promise<string> {
  const { code, stdout } = await sshExec(client, WITH_PATH + command);
  if (code !== 0) throw new Error(`${command} exited ${code}`);
  return stdout;
}

/** The engine's provisioning of one Tart VM, command for command, straight over ssh2. */
async function directProvision(mac: MacHostSim, name: string): Promise<number> {
  const start = performance.now();
  const host = await sshConnect(hostLogin(mac));
  try {
    const { log, exit } = { log: `"\${TMPDIR:-/tmp}"/'${name}'.log`, exit: `"\${TMPDIR:-/tmp}"/'${name}'.exit` };
    await step(host, `tart clone '${BASE_IMAGE}' '${name}'`);
    await step(host, `tart set '${name}' --cpu 4 --memory 8192 --disk-size 60`);
    await step(host, `tart set '${name}' --random-mac`);
    await step(host, `rm -f ${exit}; nohup sh -c 'tart run --no-graphics "$0"; echo $? > "$1"' '${name}' ${exit} > ${log} 2>&1 < /dev/null &`);
    const ip = step(host, `tart ip --wait 60 '${name}'`);
    // The engine watches for tart run exiting while it waits for the address; the watcher ends with the connection.
    void sshExec(host, `i=0; while [ ! -e ${exit} ] && [ $i -lt 140 ]; do sleep 0.5; i=$((i+1)); done; [ -e ${exit} ] || exit 0; tail -c 1500 ${log}; exit 1`).catch(() => undefined);
    await ip;
    const vm = await jumpToVm(mac, host);
    await step(vm, 'true');
    vm.end();
    return performance.now() - start;
  } finally {
    host.end();
  }
}

async function directTeardown(mac: MacHostSim, name: string): Promise<void> {
  const host = await sshConnect(hostLogin(mac));
  try {
    await step(host, `tart stop '${name}'; tart delete '${name}'; rm -f "\${TMPDIR:-/tmp}"/'${name}'.log "\${TMPDIR:-/tmp}"/'${name}'.exit`);
  } finally {
    host.end();
  }
}

export const instanceReady: Benchmark = {
  name: 'instance-ready',
  title: `POST /instances to ready on a simulated Tart host (real sshd, scripted tart) vs the same SSH commands sent directly (mean of ${ROUNDS})`,
  async run() {
    const lab = await startMacLab('benchtop-bench-instance-');
    const direct: number[] = [];
    const engine: number[] = [];
    const engineOwn: number[] = [];
    for (let round = FIRST_ROUND; round <= ROUNDS; round++) {
      const name = `bench-direct-${round}`;
      const d = await directProvision(lab.mac, name);
      await directTeardown(lab.mac, name);
      const e = await allocateReady(lab);
      await releaseAndWait(lab, e.id);
      if (round === 0) continue;
      direct.push(d);
      engine.push(e.ms);
      engineOwn.push(e.engineMs);
      detail(`round ${round}: direct ${fmtMs(d)}, through the engine ${fmtMs(e.ms)} (readyAt - createdAt ${fmtMs(e.engineMs)})`);
    }
    const mean = (xs: number[]) => xs.reduce((sum, x) => sum + x, 0) / xs.length;
    const [d, e] = [mean(direct), mean(engine)];
    const overhead = e - d;
    detail(`direct: mean ${fmtMs(d)}, median ${fmtMs(median(direct))}, fastest ${fmtMs(Math.min(...direct))}`);
    detail(`engine: mean ${fmtMs(e)}, median ${fmtMs(median(engine))}, fastest ${fmtMs(Math.min(...engine))}; readyAt - createdAt median ${fmtMs(median(engineOwn))}`);
    return [{
      benchmark: this.name,
      figure: 'engine overhead, POST to ready minus the SSH steps',
      value: fmtMs(overhead),
      baseline: `the same SSH steps directly, mean ${fmtMs(d)} (engine ${fmtMs(e)})`,
      ratio: fmtRatio(e, d),
      target: `< ${TARGET_OVERHEAD_MS} ms`,
      met: overhead < TARGET_OVERHEAD_MS,
    }];
  },
};
