import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type WebSocket from 'ws';
import { connectWs, refusedUpgrade, type WsOptions } from '../support/ws.js';
import { errorCode } from '../support/engine.js';
import { waitFor } from '../support/lab.js';
import { sshdOrSkip, startMacLab, type MacLab } from '../support/mac-lab.js';

const hasSshd = sshdOrSkip();
const UNKNOWN = '6f1c1a52-52a8-4a8e-9a55-1b5f3c9f0000';
const MiB = 1024 * 1024;

/** A terminal client: everything it was sent, and a way to wait for some output. */
interface Term {
  ws: WebSocket;
  /** Binary messages, as latin1 text (when `keep`), in order. */
  output: string;
  /** The first binary message: the replay, when there was output before this viewer joined. */
  first: Buffer | undefined;
  /** Text (control) messages, parsed. */
  controls: any[];
  bytes: number;
  /** false: count output bytes but do not keep them (megabytes of cat). */
  keep: boolean;
  closed: Promise<{ code: number; reason: string }>;
  type(keys: string): void;
  /** Waits until the output from `from` on matches, and answers the match. */
  until(pattern: RegExp, from?: number, timeoutMs?: number): Promise<RegExpMatchArray>;
}

function attach(url: string, options: WsOptions = {}): Promise<Term> {
  const { ws, refusal } = connectWs(url, options);
  const term: Term = {
    ws,
    output: '',
    first: undefined,
    controls: [],
    bytes: 0,
    keep: true,
    closed: new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() }))),
    type: (keys) => ws.send(Buffer.from(keys)),
    until: (pattern, from = 0, timeoutMs = 10_000) =>
      waitFor(`${pattern} in the terminal`, () => term.output.slice(from).match(pattern) ?? undefined, timeoutMs),
  };
  ws.on('message', (data: Buffer, binary) => {
    if (!binary) return void term.controls.push(JSON.parse(data.toString()));
    term.first ??= data;
    term.bytes += data.length;
    if (term.keep) term.output += data.toString('latin1');
  });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(term));
    ws.on('error', reject);
    void refusal.then((r) => reject(new Error(`refused: ${r.status} ${JSON.stringify(r.body)}`)));
  });
}

async function detach(term: Term): Promise<void> {
  term.ws.close();
  await term.closed;
}

/** The output line, after the echoed command: readline's escape sequences may come between the two. */
const line = (text: string) => new RegExp(`[\\r\\n]${text}\\r\\n`);

/** Runs a command and answers the line it printed. Arithmetic in the marker tells output from the echoed input. */
async function run(term: Term, command: string): Promise<string> {
  const from = term.output.length;
  const id = Math.floor(Math.random() * 1e6);
  term.type(`echo "<$((${id}+1))>$(${command})</$((${id}+1))>"\r`);
  const match = await term.until(new RegExp(`<${id + 1}>(.*)</${id + 1}>`), from);
  return match[1]!;
}

/** How far the process reading `file` has read it, from its fd's position in /proc; undefined when none reads it. */
function readerPosition(file: string): number | undefined {
  for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    try {
      for (const fd of readdirSync(`/proc/${pid}/fd`)) {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`) !== file) continue;
        return Number(/^pos:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8'))![1]);
      }
    } catch {
      /* the process ended while we looked */
    }
  }
  return undefined;
}

const terminalUrl = (lab: MacLab, session: string, instance: string, query: string) =>
  `${lab.engine.api.replace(/^http/, 'ws')}/sessions/${session}/instances/${instance}/terminal${query}`;

describe.skipIf(!hasSshd)('instance terminal over a WebSocket (real sshd, scripted tart)', () => {
  let lab: MacLab;
  let session: string;
  let instance: string;

  const url = (query = `?token=${lab.owner}`, s = session, i = instance) => terminalUrl(lab, s, i, query);

  /** The VM is gone from the host, and the engine has given its slot back. */
  const tornDown = async (id: string) => {
    await waitFor(`the VM of ${id} to be deleted`, () => !lab.macs[0]!.vms().some((vm) => vm.name === `benchtop-${id}`));
    await waitFor('its slot to be free', async () => {
      const host = (await lab.c.call('GET', '/fleet/hosts', { token: lab.owner })).body.data[0];
      return host.freeSlots === host.maxInstances - lab.macs[0]!.vms().length;
    });
  };

  beforeAll(async () => {
    lab = await startMacLab([{ name: 'mac-term' }], { instanceConcurrencyQuota: 3, terminalIdleSeconds: 1 });
    session = await lab.newSession();
    instance = (await lab.create(session)).id;
    await lab.untilStatus(session, instance, 'ready');
  });
  afterAll(() => lab?.stop());

  it('types `echo hi` and reads hi back: raw bytes as binary messages, the size as a text message', async () => {
    const t = await attach(url(`?token=${lab.owner}&cols=100&rows=30`));
    t.type('echo hi\r');
    await t.until(line('hi'));
    expect(t.controls[0]).toEqual({ type: 'size', cols: 100, rows: 30 });
    expect(await run(t, 'stty size')).toBe('30 100');
    expect(await run(t, 'echo $TERM')).toBe('xterm-256color');
    await detach(t);
  });

  it('resizes the PTY on {"type":"resize"}, and answers bad control messages with an error, changing nothing', async () => {
    const t = await attach(url());
    t.ws.send(JSON.stringify({ type: 'resize', cols: 123, rows: 45 }));
    await waitFor('the new size', () => t.controls.some((c) => c.type === 'size' && c.cols === 123 && c.rows === 45));
    expect(await run(t, 'stty size')).toBe('45 123');
    const bad = ['not json', 'null', '42', JSON.stringify({ type: 'zoom' }), JSON.stringify({ type: 'resize', cols: 0, rows: 10 }),
      JSON.stringify({ type: 'resize', cols: 80, rows: 1001 }), JSON.stringify({ type: 'resize', cols: '80', rows: 24 })];
    for (const text of bad) t.ws.send(text);
    await waitFor('an error for each', () => t.controls.filter((c) => c.type === 'error').length === bad.length);
    expect(t.controls.filter((c) => c.type === 'error').every((c) => typeof c.message === 'string' && c.message.length > 0)).toBe(true);
    expect(await run(t, 'stty size')).toBe('45 123');
    await detach(t);
  });

  it('replays the last 64 KiB of output to a reconnecting viewer, in the same shell; after the idle period, a new shell', async () => {
    const a = await attach(url());
    const pid = await run(a, 'echo $$');
    a.type('echo marker-$((6*7))\r');
    await a.until(line('marker-42'));
    await detach(a);

    const b = await attach(url());
    await b.until(/marker-42/);
    expect(b.first!.toString('latin1')).toContain('marker-42');
    expect(await run(b, 'echo $$')).toBe(pid);
    // More output than the replay holds: the replay is its newest 64 KiB only.
    b.type("head -c 100000 /dev/zero | tr '\\0' y; echo; echo tail-$((2*3))\r");
    await b.until(line('tail-6'));
    await detach(b);
    const c = await attach(url());
    await c.until(/tail-6/);
    expect(c.first!.length).toBeLessThanOrEqual(64 * 1024);
    expect(c.first!.toString('latin1')).not.toContain('marker-42');
    await detach(c);

    await sleep(1500);
    const d = await attach(url());
    expect(await run(d, 'echo $$')).not.toBe(pid);
    expect(d.output).not.toContain('tail-6');
    await detach(d);
  });

  it('shares one shell between viewers: each sees what either types; another name is another shell', async () => {
    const a = await attach(url());
    const b = await attach(url());
    const fromA = a.output.length;
    const fromB = b.output.length;
    a.type('echo shared-$((40+2))\r');
    await a.until(line('shared-42'), fromA);
    await b.until(line('shared-42'), fromB);
    b.type('echo from-b-$((1+1))\r');
    await a.until(line('from-b-2'), fromA);
    const pid = await run(a, 'echo $$');
    const tab = await attach(url(`?token=${lab.owner}&name=second-tab`));
    expect(await run(tab, 'echo $$')).not.toBe(pid);
    await Promise.all([detach(a), detach(b), detach(tab)]);
  });

  it('ends with 1000 when the shell exits', async () => {
    const t = await attach(url(`?token=${lab.owner}&name=short-lived`));
    await run(t, 'true');
    t.type('exit\r');
    expect(await t.closed).toEqual({ code: 1000, reason: 'shell exited' });
  });

  it('takes the bearer from the Authorization header, a bearer.<token> subprotocol, or an API key', async () => {
    const key = await lab.c.createKey(lab.owner);
    const ways: Array<[string, WsOptions]> = [
      ['', { headers: { authorization: `Bearer ${lab.owner}` } }],
      ['', { protocols: [`bearer.${lab.owner}`] }],
      [`?token=${key}`, {}],
    ];
    for (const [query, options] of ways) {
      const t = await attach(url(query), options);
      expect(await run(t, 'echo ok')).toBe('ok');
      await detach(t);
    }
  });

  it('refuses before the upgrade: 401 bad token, 403 readonly member, 404 another organization, 409 not ready, 400, 426', async () => {
    for (const query of ['', '?token=', '?token=mob_forged', `?token=${lab.owner.slice(0, -6)}AAAAAA`]) {
      const r = await refusedUpgrade(url(query));
      expect(r.status, query).toBe(401);
      expect(errorCode(r)).toBe('unauthorized');
    }
    expect((await refusedUpgrade(url(''), { protocols: ['bearer.forged'] })).status).toBe(401);

    const other = await lab.c.signup('other@term.test');
    const foreign = await refusedUpgrade(url(`?token=${other.token}`));
    expect(foreign.status).toBe(404);
    expect(errorCode(foreign)).toBe('session_not_found');
    const otherSession = await lab.newSession(other.token);
    expect((await refusedUpgrade(url(`?token=${other.token}`, otherSession))).status).toBe(404);
    const unknown = await refusedUpgrade(url(undefined, session, UNKNOWN));
    expect(unknown.status).toBe(404);
    expect(errorCode(unknown)).toBe('instance_not_found');

    // The host's second slot, held in provisioning.
    lab.macs[0]!.holdIp(true);
    try {
      const held = await lab.create(session);
      const notReady = await refusedUpgrade(url(undefined, session, held.id));
      expect(notReady.status).toBe(409);
      expect(errorCode(notReady)).toBe('instance_not_ready');
      await lab.c.call('POST', `/sessions/${session}/instances/${held.id}/release`, { token: lab.owner });
      await tornDown(held.id);
    } finally {
      lab.macs[0]!.holdIp(false);
    }

    const org = await lab.c.createOrganization(lab.owner, 'Terminal readers');
    const reader = await lab.c.signup('reader@term.test');
    await lab.c.addMember(lab.owner, org, reader.token, 'reader@term.test', 'readonly');
    const shared = await lab.newSession(lab.owner, org);
    // The role is checked first, whatever the instance's state.
    const theirs = await lab.create(shared, lab.owner, org);
    const readonly = await refusedUpgrade(url(`?token=${reader.token}&org=${org}`, shared, theirs.id));
    expect(readonly.status).toBe(403);
    expect(errorCode(readonly)).toBe('insufficient_role');
    await lab.c.call('POST', `/sessions/${shared}/instances/${theirs.id}/release`, { token: lab.owner, org });
    await tornDown(theirs.id);

    const badSize = await refusedUpgrade(url(`?token=${lab.owner}&cols=0`));
    expect(badSize.status).toBe(400);
    expect((await refusedUpgrade(url(`?token=${lab.owner}&name=${encodeURIComponent('no spaces')}`))).status).toBe(400);
    const plain = await lab.c.call('GET', `/sessions/${session}/instances/${instance}/terminal`, { token: lab.owner });
    expect(plain.status).toBe(426);
    expect(errorCode(plain)).toBe('websocket_required');
  });

  it('holds a 50 MiB cat for a viewer that does not read: the command waits, the engine buffers a bounded amount', async () => {
    const file = join(lab.macs[0]!.home, 'zeros');
    const made = await lab.c.call('POST', `/sessions/${session}/instances/${instance}/exec`, {
      token: lab.owner,
      body: { command: `head -c ${50 * MiB} /dev/zero > "$HOME/zeros"` },
    });
    expect(made.body.exitCode).toBe(0);

    const t = await attach(url(`?token=${lab.owner}&name=bulk`));
    await run(t, 'true');
    t.keep = false;
    let zeros = 0;
    let tail = '';
    t.ws.on('message', (data: Buffer, binary) => {
      if (!binary) return;
      for (const byte of data) if (byte === 0) zeros++;
      tail = (tail + data.toString('latin1')).slice(-200);
    });
    const before = process.memoryUsage();
    t.type(`cat ${file}; echo end-$((5*5))\r`);
    t.ws.pause();

    // The viewer reads nothing: cat gets as far as the buffers between them allow, then waits.
    let seen = false;
    const stalledAt = await waitFor('cat to stall', async () => {
      const first = readerPosition(file);
      if (first === undefined && seen) throw new Error('cat read the whole file while the viewer read nothing');
      seen ||= first !== undefined;
      await sleep(500);
      const second = readerPosition(file);
      return first !== undefined && first > 0 && first === second ? second : undefined;
    }, 15_000);
    // What is in flight is at most 1 MiB unflushed per viewer, the SSH windows (2 MiB each way of the jump) and the
    // kernel's socket buffers. Unbounded, the engine would have taken all 50 MiB, and held it: the engine shares this
    // process, so that would show in its memory (the rest of the rise is garbage of what went through).
    const during = process.memoryUsage();
    expect(stalledAt).toBeLessThan(24 * MiB);
    expect(during.arrayBuffers + during.heapUsed - before.arrayBuffers - before.heapUsed).toBeLessThan(40 * MiB);

    // A slow reader: short bursts of reading until it all arrived.
    while (!tail.includes('end-25')) {
      t.ws.resume();
      await sleep(20);
      t.ws.pause();
      await sleep(20);
    }
    t.ws.resume();
    expect(zeros).toBe(50 * MiB);
    await detach(t);
  }, 60_000);

  it('closes every viewer with 4001 when the instance is released, and refuses with 409 afterwards', async () => {
    const second = await lab.create(session);
    await lab.untilStatus(session, second.id, 'ready');
    const a = await attach(url(undefined, session, second.id));
    const b = await attach(url(`?token=${lab.owner}&name=other`, session, second.id));
    await run(a, 'true');
    await lab.c.call('POST', `/sessions/${session}/instances/${second.id}/release`, { token: lab.owner });
    expect(await a.closed).toEqual({ code: 4001, reason: 'instance released' });
    expect(await b.closed).toEqual({ code: 4001, reason: 'instance released' });
    const r = await refusedUpgrade(url(undefined, session, second.id));
    expect(r.status).toBe(409);
    expect(errorCode(r)).toBe('instance_not_ready');
  });

  it('closes viewers with 1001 when the engine stops', async () => {
    const t = await attach(url());
    await run(t, 'true');
    await lab.engine.engine.stop();
    expect(await t.closed).toEqual({ code: 1001, reason: 'Benchtop is shutting down' });
  });
});

describe.skipIf(!hasSshd)('instance terminal on a bare host', () => {
  it('is a login shell on the host, in the instance\'s work dir', async () => {
    const lab = await startMacLab([{ name: 'mac-mini', mode: 'bare', baseImage: 'macOS 15.1 (bare host)' }]);
    try {
      const session = await lab.newSession();
      const { id } = await lab.create(session);
      await lab.untilStatus(session, id, 'ready');
      const t = await attach(terminalUrl(lab, session, id, `?token=${lab.owner}&cols=90&rows=20`));
      expect(await run(t, 'pwd')).toBe(join(lab.macs[0]!.home, 'benchtop-work'));
      expect(await run(t, 'stty size')).toBe('20 90');
      expect(await run(t, 'echo $TERM')).toBe('xterm-256color');
      await detach(t);
    } finally {
      await lab.stop();
    }
  });
});
