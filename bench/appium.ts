/**
 * WebDriver through the lab (/wd/hub, the engine's bundle as `npm run serve` runs it, real Appium behind it) against a
 * user's own Appium started directly on the same phone with the same capabilities, in the same run: session start
 * (the server installed, and the first session that installs it), find + click, a screenshot, four sessions at once,
 * and the memory the engine and its Appium hold with four sessions running. A simulated phone answers in milliseconds
 * where a real one takes seconds: each detail line adds the lab's own overhead to a real phone's published cost.
 */
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { attach, remote } from 'webdriverio';
import { connectToAdb } from '../src/sim/android/index.js';
import { startAppium } from '../test/support/appium-server.js';
import { buildApk } from '../src/sim/android/apk.js';
import { startAndroidLab, waitUntilFree } from './support/android-lab.js';
import { onCleanup } from './support/cleanup.js';
import { nodeScript } from './support/bundle.js';
import { cpuMs, descendants, rssMb, startChild } from './support/processes.js';
import { detail, fmtMb, fmtMs, fmtRatio, median, type Benchmark, type Figure } from './support/report.js';
import { call, ROOT } from './support/servers.js';
import { BENCH_SCREEN, SMOKE, sized } from './support/smoke.js';

const ANDROID_HOME = '/usr/lib/android-sdk';
const ROUNDS = sized(4, 1);
// Thirty each: a median of ten moved by 10 ms between runs on a 2-core machine.
const COMMANDS = sized(30, 1);
/** Sessions on as many phones at once, against one alone. */
const AT_ONCE = sized(4, 2);
/** An app of a real app's size (issue 43: 50 MB), smaller in a smoke run. */
const APP_BYTES = sized(50, 1) * 1024 * 1024;
const PHONE_SCRIPT = fileURLToPath(new URL('./support/phone-process.ts', import.meta.url));
const BARE_PROXY_SCRIPT = fileURLToPath(new URL('./support/bare-proxy.mjs', import.meta.url));
/** Published: a UiAutomator2 session start of about 20 s on a Samsung S7 (appium/appium#11527), the server installed. */
const REAL_SESSION_MS = 20_000;
/** Published: installing the UiAutomator2 server's two APKs is most of a first session's 20-45 s (appium/appium#12167). */
const REAL_FIRST_SESSION_MS = 45_000;

type Driver = WebdriverIO.Browser;

/** CPU time the whole machine has spent busy (every core, /proc/stat's first line less idle and iowait), in ms. */
function machineBusyMs(): number {
  const ticks = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  return (ticks.reduce((a, b) => a + b, 0) - ticks[3]! - ticks[4]!) * 10;
}

async function timed<T>(work: () => Promise<T>): Promise<[T, number]> {
  const start = performance.now();
  const result = await work();
  return [result, performance.now() - start];
}

function figure(name: string, value: number, baseline: number, baselineName: string, target: string, met: boolean, format = fmtMs): Figure {
  return { benchmark: 'appium', figure: name, value: format(value), baseline: `${format(baseline)} (${baselineName})`, ratio: fmtRatio(value, baseline), target, met };
}

/** Milliseconds of each find by text + click and of each screenshot. */
interface Samples {
  clicks: number[];
  shots: number[];
}

/** What a find by text + click and a screenshot cost in a session, COMMANDS of each. */
async function commands(driver: Driver): Promise<Samples> {
  await driver.activateApp('com.android.settings');
  const clicks: number[] = [];
  const shots: number[] = [];
  for (let i = 0; i < COMMANDS; i++) {
    clicks.push((await timed(async () => driver.$('android=new UiSelector().text("Wi-Fi")').click()))[1]);
    await driver.back();
    shots.push((await timed(() => driver.takeScreenshot()))[1]);
  }
  return { clicks, shots };
}

const medians = ({ clicks, shots }: Samples) => ({ click: median(clicks), screenshot: median(shots) });

/** Adds one session's samples to those of its kind. */
function pool(into: Samples, more: Samples): void {
  into.clicks.push(...more.clicks);
  into.shots.push(...more.shots);
}

export const appium: Benchmark = {
  name: 'appium',
  title: 'WebDriver through the lab (/wd/hub, real Appium behind it) against a user\'s own Appium on the same phone, same capabilities',
  async run(): Promise<Figure[]> {
    const lab = await startAndroidLab('benchtop-bench-appium-', { model: 'Bench 1', ...BENCH_SCREEN });
    // More phones for the sessions-at-once figure.
    const serials = [lab.serial];
    for (let i = 2; i <= AT_ONCE; i++) {
      const phone = startChild(process.execPath, nodeScript(PHONE_SCRIPT), { cwd: ROOT, env: { ...process.env, BENCH_PHONE_OPTIONS: JSON.stringify({ model: `Bench ${i}`, ...BENCH_SCREEN }) } });
      const [, port] = await phone.waitForOutput(/listening on 127\.0\.0\.1:(\d+)/, 30_000);
      serials.push(await connectToAdb(Number(port), lab.adb.port));
    }
    const direct = await startAppium({ ANDROID_HOME }, ['uiautomator2']);
    onCleanup(() => direct.stop());
    // The least any proxy in front of Appium adds (bench/support/bare-proxy.mjs): the lab's own share is beyond it.
    const bare = startChild(process.execPath, [BARE_PROXY_SCRIPT], { cwd: ROOT, env: { ...process.env, APPIUM_PORT: String(direct.port) } });
    const [, bareUrl] = await bare.waitForOutput(/Bare proxy is serving (http:\/\/\S+)/, 30_000);
    const url = new URL(lab.engine.api);
    const viaLab = (caps: Record<string, unknown>) =>
      remote({ protocol: 'http', hostname: url.hostname, port: Number(url.port), path: '/wd/hub', user: 'bench', key: lab.apiKey, logLevel: 'silent', connectionRetryCount: 0, connectionRetryTimeout: 120_000, capabilities: { platformName: 'Android', 'appium:automationName': 'UiAutomator2', 'appium:newCommandTimeout': 120, ...caps } as WebdriverIO.Capabilities });
    // The same capabilities, with what a user's own Appium needs to find the phone: its serial and adb server.
    const viaDirect = (udid = lab.serial) =>
      remote({ hostname: '127.0.0.1', port: direct.port, path: '/', logLevel: 'silent', connectionRetryCount: 0, connectionRetryTimeout: 120_000, capabilities: { platformName: 'Android', 'appium:automationName': 'UiAutomator2', 'appium:newCommandTimeout': 120, 'appium:udid': udid, 'appium:adbPort': lab.adb.port } as WebdriverIO.Capabilities });
    const one = { 'appium:deviceName': 'Bench 1' };

    // The first session through the lab starts Appium (not counted: the lab starts it once) and installs the server.
    await fetch(`${lab.engine.api}/health`);
    const [firstDriver, first] = await timed(() => viaLab(one));
    await firstDriver.deleteSession();
    // The lab keeps a video of every run by default; `benchtop:options.video: false` keeps none. A simulated phone
    // encodes that video in software (ffmpeg) on the lab box's own two cores, beside Appium and the engine; a real phone
    // encodes it on its own hardware encoder. So the like-for-like figure against a user's own Appium (which records
    // nothing) is the lab's with the video off; the figure with it on is reported beside it.
    const labStart: number[] = [];
    const labStartVideo: number[] = [];
    const directStart: number[] = [];
    let videoCommands = { click: 0, screenshot: 0 };
    const noVideo = { ...one, 'benchtop:options': { video: false } };
    // One warm-up of the direct Appium (it loads its driver's modules on its first session), then interleaved rounds.
    // A smoke run measures nothing, so it warms nothing up.
    if (!SMOKE) await (await viaDirect()).deleteSession();
    // Round 0's session without video is a whole run on Bench 1 (session, the commands, its end): a smoke run times it
    // as the run alone below, rather than doing the same again.
    let noVideoRunMs = 0;
    // Every round measures the commands on a session of each, and every other round starts with the user's own
    // Appium: the simulated phone's side of a command gets faster as its code warms up, and measured in round 0 alone,
    // the lab first, the lab's commands ran on a colder phone than the user's own (+12 ms in one run against +6 ms).
    const labSamples: Samples = { clicks: [], shots: [] };
    const directSamples: Samples = { clicks: [], shots: [] };
    const bareSamples: Samples = { clicks: [], shots: [] };
    const viaDirectRound = async () => {
      const [d2, ms2] = await timed(() => viaDirect());
      directStart.push(ms2);
      pool(directSamples, await commands(d2));
      // The same session, on the same phone, driven through the bare proxy: WebdriverIO attaches to it there.
      const d3 = await attach({ sessionId: d2.sessionId, hostname: '127.0.0.1', port: Number(new URL(bareUrl!).port), path: '/', logLevel: 'silent', connectionRetryCount: 0, capabilities: d2.capabilities as WebdriverIO.Capabilities });
      pool(bareSamples, await commands(d3));
      await d2.deleteSession();
    };
    for (let round = 0; round < ROUNDS; round++) {
      if (round % 2 === 1) await viaDirectRound();
      const runStarted = performance.now();
      const [d1, ms1] = await timed(() => viaLab(noVideo));
      labStart.push(ms1);
      pool(labSamples, await commands(d1));
      await d1.deleteSession();
      if (round === 0) noVideoRunMs = performance.now() - runStarted;
      const [d0, ms0] = await timed(() => viaLab(one));
      labStartVideo.push(ms0);
      if (round === 0) videoCommands = medians(await commands(d0));
      await d0.deleteSession();
      if (round % 2 === 0) await viaDirectRound();
    }
    const labCommands = medians(labSamples);
    const directCommands = medians(directSamples);
    const bareCommands = medians(bareSamples);
    detail(`a bare proxy in front of the user's own Appium (no checks, no logs, no ADB bridge) adds ${fmtMs(bareCommands.click - directCommands.click)} to a find + click and ${fmtMs(bareCommands.screenshot - directCommands.screenshot)} to a screenshot; the lab adds ${fmtMs(labCommands.click - directCommands.click)} and ${fmtMs(labCommands.screenshot - directCommands.screenshot)}`);
    const start = median(labStart);
    const startVideo = median(labStartVideo);
    const own = median(directStart);
    detail(`first session through the lab ${fmtMs(first)} (Appium started by it, the server installed); later ones ${fmtMs(start)}, ${fmtMs(startVideo)} with the run's video`);
    detail(`with the run's video the simulated phone encodes H.264 in software on this machine's cores: find + click ${fmtMs(videoCommands.click)}, screenshot ${fmtMs(videoCommands.screenshot)} (a real phone encodes on its hardware encoder)`);
    detail(`a real phone: the lab adds ${fmtMs(start - own)} to a session start of about ${fmtMs(REAL_SESSION_MS)} (appium/appium#11527): ${fmtRatio(REAL_SESSION_MS + start - own, REAL_SESSION_MS)}`);
    detail(`a real phone: keeping the server installed saves most of a first session's ${fmtMs(REAL_FIRST_SESSION_MS)} (appium/appium#12167)`);

    // Sessions on as many phones at once, against one alone: find + click each. Started, commanded and ended together,
    // they are also the runs at once below, which a smoke run times here rather than doing the same again.
    const busyFour0 = machineBusyMs();
    const fourStarted = performance.now();
    const four = await Promise.all(Array.from({ length: AT_ONCE }, (_, i) => viaLab({ 'appium:deviceName': `Bench ${i + 1}`, 'benchtop:options': { video: false } })));
    const engineRss = rssMb(lab.engine.child.pid!);
    const appiumPids = descendants(lab.engine.child.pid!).filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('appium');
      } catch {
        return false;
      }
    });
    const appiumRss = appiumPids.reduce((sum, pid) => sum + rssMb(pid), 0);
    // Where the machine's CPU goes during runs at once: the lab's share (engine and Appium) against everything else.
    const labPids = [lab.engine.child.pid!, ...appiumPids];
    const labCpu = () => labPids.reduce((sum, pid) => {
      try {
        return sum + cpuMs(pid);
      } catch {
        return sum; // a short-lived process of Appium's that has ended
      }
    }, 0);
    const labFour0 = labCpu();
    const together = await Promise.all(four.map((d) => commands(d)));
    await Promise.all(four.map((d) => d.deleteSession()));
    const fourMs = performance.now() - fourStarted;
    const [busyFour, labFour] = [machineBusyMs() - busyFour0, labCpu() - labFour0];
    const alone = labCommands.click;
    const atOnce = median(together.map((t) => median(t.clicks)));
    detail(`with ${AT_ONCE} sessions running: engine ${fmtMb(engineRss)}, Appium ${fmtMb(appiumRss)} (${appiumPids.length} processes)`);

    // A whole run (session, the commands, its end) on each phone alone, then on all of them at once: the wall time of
    // the lot against the slowest alone. On this 2-core machine the phones, Appium and the engine share the cores; a
    // real phone runs its side of a command on its own.
    const run = async (i: number) => {
      const d = await viaLab({ 'appium:deviceName': `Bench ${i + 1}`, 'benchtop:options': { video: false } });
      await commands(d);
      await d.deleteSession();
    };
    // A smoke run has timed a run alone on Bench 1 (round 0 without video) and the runs at once (the sessions above);
    // the measuring run times each phone's alone, then all at once.
    let [aloneRuns, allRuns, busy, labUsed] = [[noVideoRunMs], fourMs, busyFour, labFour];
    if (!SMOKE) {
      aloneRuns = [];
      for (let i = 0; i < AT_ONCE; i++) aloneRuns.push((await timed(() => run(i)))[1]);
      const [busy0, lab0] = [machineBusyMs(), labCpu()];
      [, allRuns] = await timed(() => Promise.all(Array.from({ length: AT_ONCE }, (_, i) => run(i))));
      [busy, labUsed] = [machineBusyMs() - busy0, labCpu() - lab0];
    }
    const slowestAlone = Math.max(...aloneRuns);
    detail(`a run alone on each phone: ${aloneRuns.map((ms) => fmtMs(ms)).join(', ')} (${fmtMs(aloneRuns.reduce((a, b) => a + b, 0))} in all); all ${AT_ONCE} at once ${fmtMs(allRuns)}`);
    detail(`during the runs at once the machine's ${cpus().length} cores were ${((busy / (allRuns * cpus().length)) * 100).toFixed(0)} % busy: the engine and Appium ${fmtMs(labUsed)} of CPU, everything else (the simulated phones, adb, WebdriverIO) ${fmtMs(busy - labUsed)}; a real phone does its own share on itself`);
    // The same runs through a user's own Appium on the same phones, alone and all at once: what running them together
    // costs this machine without the lab, so that the lab's share of the figure above can be told from the cores'.
    const ownFigures: Figure[] = [];
    if (!SMOKE) {
      for (const serial of serials) await waitUntilFree({ ...lab, serial }, 60_000);
      const ownRun = async (i: number) => {
        const d = await viaDirect(serials[i]);
        await commands(d);
        await d.deleteSession();
      };
      const ownAlone: number[] = [];
      for (let i = 0; i < AT_ONCE; i++) ownAlone.push((await timed(() => ownRun(i)))[1]);
      const busy0 = machineBusyMs();
      const [, ownAll] = await timed(() => Promise.all(Array.from({ length: AT_ONCE }, (_, i) => ownRun(i))));
      const ownBusy = machineBusyMs() - busy0;
      detail(`through a user's own Appium on the same phones: a run alone ${ownAlone.map((ms) => fmtMs(ms)).join(', ')}; all ${AT_ONCE} at once ${fmtMs(ownAll)}, the cores ${((ownBusy / (ownAll * cpus().length)) * 100).toFixed(0)} % busy`);
      ownFigures.push(
        figure(`${AT_ONCE} runs on ${AT_ONCE} phones at once through a user's own Appium: wall time`, ownAll, Math.max(...ownAlone), 'its slowest run alone', 'reported (the machine)', true),
        figure(`${AT_ONCE} runs at once: through the lab against through a user's own Appium`, allRuns, ownAll, "a user's own Appium, the same runs at once", 'reported', true),
      );
    }

    // A first session with a stored app of a real app's size: the lab installs it (push and pm install) before Appium
    // starts, against the same file installed through the REST API on a phone already held, plus a session without it.
    const apk = buildApk({ packageName: 'com.example.benchbig', label: 'Bench Big', payloadBytes: APP_BYTES });
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(apk)]), 'bench-big.apk');
    const uploaded = (await (await fetch(`${lab.engine.api}/files/upload`, { method: 'POST', headers: { authorization: `Bearer ${lab.apiKey}` }, body: form })).json()) as { id: string };
    for (let ready = false; !ready; await new Promise((r) => setTimeout(r, 100))) {
      ready = (await call<{ status: string }>('GET', `${lab.engine.api}/files/${uploaded.id}`, { bearer: lab.apiKey })).status === 'ready';
    }
    const [withApp, appStart] = await timed(() => viaLab({ ...noVideo, 'appium:app': `lab://files/${uploaded.id}` }));
    await withApp.deleteSession();
    await waitUntilFree(lab, 60_000);
    const session = await call<{ id: string }>('POST', `${lab.engine.api}/sessions`, { bearer: lab.apiKey, body: {} });
    const allocation = await call<{ id: string }>('POST', `${lab.engine.api}/sessions/${session.id}/devices`, { bearer: lab.apiKey, body: { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }, { attribute: 'serial', operator: 'EQUALS', value: lab.serial }] } });
    for (let held = false; !held; await new Promise((r) => setTimeout(r, 50))) {
      held = (await call<{ status: string }>('GET', `${lab.engine.api}/sessions/${session.id}/devices/${allocation.id}`, { bearer: lab.apiKey })).status === 'in_use';
    }
    const [, restInstall] = await timed(() => call('POST', `${lab.engine.api}/sessions/${session.id}/devices/${encodeURIComponent(lab.serial)}/install`, { bearer: lab.apiKey, body: { file: uploaded.id, launch: true }, timeoutMs: 120_000 }));
    await call('POST', `${lab.engine.api}/sessions/${session.id}/devices/${encodeURIComponent(lab.serial)}/release`, { bearer: lab.apiKey });
    detail(`a ${fmtMb(APP_BYTES / 1024 / 1024)} app from lab://files: the first session ${fmtMs(appStart)}; the REST API's install of it ${fmtMs(restInstall)}, plus a session without it ${fmtMs(start)}`);

    return [
      figure('session start through the lab (server installed, no video)', start, own, "a user's own Appium", '<= 1.2x', start <= own * 1.2),
      figure("session start through the lab with the run's video (the simulated phone encodes it in software)", startVideo, own, "a user's own Appium", 'reported', true),
      figure('first session through the lab (installs the server)', first, start, 'a later session', 'reported', true),
      figure('find + click through the lab (no video)', labCommands.click, directCommands.click, "a user's own Appium", '<= +5 ms', labCommands.click - directCommands.click <= 5),
      figure('find + click through a bare proxy (bench/support/bare-proxy.mjs)', bareCommands.click, directCommands.click, "a user's own Appium", 'reported', true),
      figure('find + click through the lab against through a bare proxy: the lab\'s own share', labCommands.click, bareCommands.click, 'a bare proxy', 'reported', true),
      figure('screenshot through the lab (no video)', labCommands.screenshot, directCommands.screenshot, "a user's own Appium", '<= +5 ms', labCommands.screenshot - directCommands.screenshot <= 5),
      // A rate: one alone over four at once, so that >= 0.9x means each of four keeps 90% of a lone session's pace.
      { benchmark: 'appium', figure: `${AT_ONCE} sessions at once: each one's find + click pace`, value: fmtMs(atOnce), baseline: `${fmtMs(alone)} (one alone)`, ratio: fmtRatio(alone, atOnce), target: '>= 0.9x', met: alone / atOnce >= 0.9 },
      figure(`${AT_ONCE} runs on ${AT_ONCE} phones at once: wall time`, allRuns, slowestAlone, 'the slowest run alone', '<= 1.2x', allRuns <= slowestAlone * 1.2),
      ...ownFigures,
      figure(`first session with a ${fmtMb(APP_BYTES / 1024 / 1024)} app from lab://files`, appStart, restInstall + start, "the REST API's install plus a session without it", 'reported', true),
      figure(`memory with ${AT_ONCE} sessions: engine + Appium`, engineRss + appiumRss, engineRss, 'the engine alone', 'reported', true, fmtMb),
    ];
  },
};
