import { spawn, type ChildProcess } from 'node:child_process';
import Adb from '@devicefarmer/adbkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectToAdb, findAdb, SimulatedPhone, startAdbServer, type AdbServer } from '../../src/sim/android/index.js';
import { adbOrSkip } from '../support/lab.js';

/**
 * The demo phone's interactive shell through Debian's own `adb shell`, on a real PTY (util-linux's `script`): what a
 * person's terminal sends must reach it as on a phone. Ctrl+C interrupts the foreground command; Tab completes.
 */
const ready = adbOrSkip();

describe.skipIf(!ready)('the simulated phone\'s shell behind a PTY, through adb shell', () => {
  let adb: AdbServer;
  let phone: SimulatedPhone;
  let serial: string;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    adb = await startAdbServer();
    phone = new SimulatedPhone({ model: 'Pixel 8', deviceName: 'husky' });
    serial = await connectToAdb(await phone.start(), adb.port);
  }, 40_000);
  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await adb?.stop();
    await phone?.stop();
  });

  /** `adb shell` (and any arguments) in a PTY of its own; what it prints collects in `output()`. */
  const terminal = (args: string[]) => {
    const adbCommand = [findAdb()!, '-P', String(adb.port), '-s', serial, 'shell', ...args].join(' ');
    const child = spawn('script', ['-qfc', adbCommand, '/dev/null'], { env: adb.env, stdio: ['pipe', 'pipe', 'pipe'] });
    children.push(child);
    let text = '';
    child.stdout!.on('data', (d: Buffer) => (text += d.toString('utf8')));
    const until = async (pattern: RegExp, ms: number, from = 0) => {
      const deadline = Date.now() + ms;
      while (!pattern.test(text.slice(from))) {
        if (Date.now() > deadline) throw new Error(`no ${pattern} within ${ms} ms; the terminal shows ${JSON.stringify(text)}`);
        await new Promise((r) => setTimeout(r, 20));
      }
      return Date.now() - (deadline - ms);
    };
    return { child, type: (s: string) => child.stdin!.write(s), output: () => text, until };
  };

  it('Ctrl+C ends `sleep 100` and `logcat`, and the prompt comes back at once', async () => {
    const t = terminal([]);
    await t.until(/husky:\/ \$ $/, 10_000);
    for (const command of ['sleep 100', 'logcat']) {
      t.type(`${command}\r`);
      await new Promise((r) => setTimeout(r, 300));
      const from = t.output().length;
      t.type('\x03');
      const took = await t.until(/\^C[^]*husky:\/ \$ $/, 1000, from);
      expect(took).toBeLessThan(1000);
    }
    t.type('echo still here\r');
    await t.until(/\r\nstill here\r\n/, 2000);
    t.type('exit\r');
  });

  it('Tab completes a command and a path name', async () => {
    const t = terminal([]);
    await t.until(/\$ $/, 10_000);
    t.type('getpro\t');
    await t.until(/getprop $/, 2000);
    t.type('\x03ls /sdcard/Downl\t');
    await t.until(/ls \/sdcard\/Download\/$/, 2000);
    t.type('\r');
    await t.until(/\$ $/, 2000, t.output().lastIndexOf('Download/'));
    t.type('exit\r');
  });

  it('Ctrl+C ends a command of the v1 shell service (`shell:<command>`, which adbd runs behind a PTY)', async () => {
    const stream = await Adb.createClient({ port: adb.port }).getDevice(serial).shell('sleep 100');
    const ended = new Promise((resolve) => stream.once('end', resolve).resume());
    await new Promise((r) => setTimeout(r, 300));
    const started = Date.now();
    stream.write('\x03');
    await ended;
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('Ctrl+C ends a command run with a PTY (adb shell -t)', async () => {
    const t = terminal(['-t', 'sleep', '100']);
    await new Promise((r) => setTimeout(r, 1000));
    const exited = new Promise((resolve) => t.child.once('exit', resolve));
    t.type('\x03');
    const started = Date.now();
    await exited;
    expect(Date.now() - started).toBeLessThan(2000);
  });
});
