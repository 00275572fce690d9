/**
 * Targets: through the remote-connect bridge, an 8 MiB `adb push` and `adb pull` move at least 0.8x the bytes per
 * second of the same through the lab's adb server directly, and an `adb shell true` round trip takes at most 1.5x the
 * direct one. The user's adb is Debian's, with its own server and key, as a user's laptop runs it; the direct runs use
 * the lab's own adb server on the same phone. Bridge and direct runs alternate, so drift falls on both alike.
 * Transfers are measured twice: with the phone behind a USB link at a real phone's published rate (the target), and
 * at the simulated phone's full speed, where nothing hides the cost of the bridge's extra hop.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startAdbServer } from '../src/sim/android/index.js';
import { allocateUntilInUse, startAndroidLab } from './support/android-lab.js';
import { onCleanup, tempDir } from './support/cleanup.js';
import { USB3_PUSH_BYTES_PER_SECOND } from './support/usb-link.js';
import { detail, fmtMs, fmtRatio, median, percentile, type Benchmark } from './support/report.js';
import { call, REQUEST_TIMEOUT_MS } from './support/servers.js';
import { sized } from './support/smoke.js';

const FILE_BYTES = sized(8, 1) * 1024 * 1024;
const TRANSFERS = sized(12, 1);
const SHELLS = sized(30, 1);
const WARMUP = sized(2, 0);
const PUSH_PULL_TARGET = 0.8;
const SHELL_TARGET = 1.5;
const MB = 1024 * 1024;

export const remoteConnect: Benchmark = {
  name: 'remote-connect',
  title: `8 MiB adb push/pull (${TRANSFERS} each) and adb shell true (${SHELLS}) through the bridge vs the lab's adb server directly`,
  async run() {
    const first = 21000 + Math.floor(Math.random() * 100) * 100; // below the ephemeral range (32768+)
    const lab = await startAndroidLab('benchtop-bench-remote-', { model: 'Bench Remote' }, { BENCHTOP_REMOTE_PORTS: `${first}-${first + 9}` }, { usbLink: true });
    const user = await startAdbServer();
    onCleanup(() => user.stop());
    const { id: sessionId } = await call<{ id: string }>('POST', `${lab.engine.api}/sessions`, { bearer: lab.apiKey });
    await allocateUntilInUse(lab, sessionId, REQUEST_TIMEOUT_MS);
    await call('POST', `${lab.engine.api}/adb-keys`, { bearer: lab.apiKey, body: { publicKey: readFileSync(join(user.env.HOME!, '.android', 'adbkey.pub'), 'utf8') } });
    const opened = await call<{ address: string }>('POST', `${lab.engine.api}/sessions/${sessionId}/devices/${encodeURIComponent(lab.serial)}/remote-connect`, { bearer: lab.apiKey });
    const connected = await user.run(['connect', opened.address]);
    if (!connected.stdout.toString().includes(`connected to ${opened.address}`)) throw new Error(`adb connect: ${connected.stdout}${connected.stderr}`);

    const bridge = (args: string[]) => user.run(['-s', opened.address, ...args], { timeoutMs: 60_000 });
    const direct = (args: string[]) => lab.adb.run(['-s', lab.serial, ...args], { timeoutMs: 60_000 });
    const dir = tempDir('benchtop-bench-remote-files-');
    const local = join(dir, 'up.bin');
    const bytes = randomBytes(FILE_BYTES);
    const sha = createHash('sha256').update(bytes).digest('hex');
    writeFileSync(local, bytes);
    const timed = async (run: () => Promise<{ code: number | null; stderr: string }>, what: string) => {
      const start = performance.now();
      const result = await run();
      if (result.code !== 0) throw new Error(`${what} exited ${result.code}: ${result.stderr}`);
      return performance.now() - start;
    };
    const pulledOk = (path: string) => {
      if (createHash('sha256').update(readFileSync(path)).digest('hex') !== sha) throw new Error(`${path} came back different`);
    };

    // Bridge and direct transfers side by side, `TRANSFERS` of each after a warm-up, at the USB link's current rate.
    const transfers = async () => {
      const push = { bridge: [] as number[], direct: [] as number[] };
      const pull = { bridge: [] as number[], direct: [] as number[] };
      for (let i = 0; i < WARMUP + TRANSFERS; i++) {
        const b = await timed(() => bridge(['push', local, '/sdcard/remote-bench.bin']), 'push through the bridge');
        const d = await timed(() => direct(['push', local, '/sdcard/remote-bench.bin']), 'push direct');
        const bp = await timed(() => bridge(['pull', '/sdcard/remote-bench.bin', join(dir, 'b.bin')]), 'pull through the bridge');
        const dp = await timed(() => direct(['pull', '/sdcard/remote-bench.bin', join(dir, 'd.bin')]), 'pull direct');
        pulledOk(join(dir, 'b.bin'));
        pulledOk(join(dir, 'd.bin'));
        if (i < WARMUP) continue;
        push.bridge.push(b);
        push.direct.push(d);
        pull.bridge.push(bp);
        pull.direct.push(dp);
      }
      return { push, pull };
    };
    const simulated = await transfers();
    lab.usbLink!.setRate(USB3_PUSH_BYTES_PER_SECOND);
    const usb3 = await transfers();
    lab.usbLink!.setRate(Infinity);
    const shell = { bridge: [] as number[], direct: [] as number[] };
    for (let i = 0; i < WARMUP + SHELLS; i++) {
      const b = await timed(() => bridge(['shell', 'true']), 'shell through the bridge');
      const d = await timed(() => direct(['shell', 'true']), 'shell direct');
      if (i < WARMUP) continue;
      shell.bridge.push(b);
      shell.direct.push(d);
    }
    await lab.engine.child.stop();

    const mbps = (ms: number) => FILE_BYTES / MB / (ms / 1000);
    const rate = (ms: number) => `${mbps(ms).toFixed(0)} MB/s`;
    // Each bridge run next to the direct run beside it: how far the ratio moves within the run, as the machine's load does.
    const spread = (xs: { bridge: number[]; direct: number[] }, inverse = false) => {
      const ratios = xs.bridge.map((b, i) => (inverse ? b / xs.direct[i]! : xs.direct[i]! / b));
      return `ratio per pair p25-p75 ${percentile(ratios, 25).toFixed(2)}-${percentile(ratios, 75).toFixed(2)}x`;
    };
    const figure = (name: string, xs: { bridge: number[]; direct: number[] }, real: boolean) => {
      const [b, d] = [median(xs.bridge), median(xs.direct)];
      const link = real ? `the phone's USB link at ${USB3_PUSH_BYTES_PER_SECOND / 1e6} MB/s` : 'the simulated phone at full speed';
      detail(`${name}, ${link}: bridge ${rate(b)} (${fmtMs(b)}), direct ${rate(d)} (${fmtMs(d)}); ${spread(xs)}`);
      return {
        benchmark: this.name,
        figure: real
          ? `adb ${name} 8 MiB through the bridge, a real phone's rate (USB 3.0, ${USB3_PUSH_BYTES_PER_SECOND / 1e6} MB/s published for a Pixel 3)`
          : `adb ${name} 8 MiB through the bridge, simulated phone at full speed (several times a real phone's USB rate)`,
        value: `median ${rate(b)}`,
        baseline: `lab adb server directly ${rate(d)}`,
        ratio: fmtRatio(mbps(b), mbps(d)),
        // The target is judged at a real phone's rate: there the user's time goes. At full speed the figure shows
        // what the bridge's extra hop costs in CPU, which a real phone's link hides.
        target: real ? `>= ${PUSH_PULL_TARGET.toFixed(2)}x of direct` : 'reported',
        met: real ? mbps(b) / mbps(d) >= PUSH_PULL_TARGET : true,
      };
    };
    const [sb, sd] = [median(shell.bridge), median(shell.direct)];
    detail(`shell true: bridge ${fmtMs(sb)}, direct ${fmtMs(sd)} (each includes starting the adb client process); ${spread(shell, true)}`);
    return [
      figure('push', usb3.push, true),
      figure('pull', usb3.pull, true),
      figure('push', simulated.push, false),
      figure('pull', simulated.pull, false),
      {
        benchmark: this.name,
        figure: 'adb shell true through the bridge',
        value: `median ${fmtMs(sb)}`,
        baseline: `lab adb server directly ${fmtMs(sd)}`,
        ratio: fmtRatio(sb, sd),
        target: `<= ${SHELL_TARGET.toFixed(2)}x of direct`,
        met: sb / sd <= SHELL_TARGET,
      },
    ];
  },
};
