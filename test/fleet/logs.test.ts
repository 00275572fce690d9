import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, errorCode } from '../support/engine.js';
import { adbOrSkip, allocateInUse, startLab, waitFor, type TestLab } from '../support/lab.js';

const hasAdb = adbOrSkip();

interface SseEvent {
  event: string;
  data: Record<string, unknown>;
}

/** Follows an event stream over plain fetch, collecting its events, as an EventSource would. */
async function follow(url: string) {
  const controller = new AbortController();
  const res = await fetch(url, { signal: controller.signal });
  const events: SseEvent[] = [];
  let text = '';
  const done = (async () => {
    const decoder = new TextDecoder();
    try {
      const reader = res.body!.getReader();
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
        text += decoder.decode(chunk.value, { stream: true });
        let cut;
        while ((cut = text.indexOf('\n\n')) >= 0) {
          const block = text.slice(0, cut);
          text = text.slice(cut + 2);
          const event = /^event: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (event && data) events.push({ event, data: JSON.parse(data) });
        }
      }
    } catch {
      // aborted by the test
    }
  })();
  return { res, events, done, close: () => controller.abort() };
}

describe.skipIf(!hasAdb)('device logs', () => {
  let lab: TestLab;
  let c: ReturnType<typeof client>;
  let owner: string;

  beforeAll(async () => {
    lab = await startLab([{ model: 'Pixel 7' }, { model: 'Pixel 5' }]);
    c = client(lab.engine.api);
    owner = await c.login();
  }, 60_000);
  afterAll(() => lab?.stop());

  it('the simulated phone answers adb logcat with threadtime lines of what it did', async () => {
    const serial = lab.serials[1]!;
    await lab.adb.run(['-s', serial, 'shell', 'input keyevent KEYCODE_WAKEUP; input tap 12 34']);
    const out = (await lab.adb.run(['-s', serial, 'logcat', '-d'])).stdout.toString();
    expect(out).toMatch(/^\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} +\d+ +\d+ I InputDispatcher: Delivering touch to .*x=12 y=34$/m);
    expect(out).toMatch(/ I PowerManagerService: Waking up/);
    const brief = (await lab.adb.run(['-s', serial, 'logcat', '-d', '-v', 'brief', 'InputDispatcher:I', '*:S'])).stdout.toString();
    expect(brief.split('\n').filter((l) => l.startsWith('I/')).every((l) => l.startsWith('I/InputDispatcher('))).toBe(true);
  });

  it('streams the allocation\'s log as SSE, one log event per line as the phone does things, and ends at release', async () => {
    // Logged before the allocation: not this user's to read.
    await lab.phone(lab.serials[0]!).shell('input tap 1 2');
    const { session, serial } = await allocateInUse(c, owner, 'Pixel 7');
    const logs = await follow(`${lab.engine.api}/sessions/${session}/devices/${serial}/logs?token=${owner}`);
    expect(logs.res.status).toBe(200);
    expect(logs.res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    await c.call('POST', `/sessions/${session}/devices/${serial}/actions`, { token: owner, body: { type: 'tap', x: 100, y: 200 } });
    await c.call('POST', `/sessions/${session}/devices/${serial}/actions`, { token: owner, body: { type: 'launchApp', packageName: 'com.example.notes' } });
    const tap = await waitFor('the tap\'s line', () => logs.events.find((e) => String(e.data.message).includes('x=100 y=200')));
    expect(tap.event).toBe('log');
    expect(tap.data).toEqual({ time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/), level: 'info', tag: 'InputDispatcher', pid: expect.any(Number), message: expect.any(String) });
    expect(Math.abs(Date.parse(String(tap.data.time)) - Date.now())).toBeLessThan(60_000);
    await waitFor('the launch\'s line', () => logs.events.some((e) => e.data.tag === 'ActivityTaskManager' && String(e.data.message).includes('cmp=com.example.notes/')));
    expect(logs.events.some((e) => String(e.data.message).includes('x=1 y=2'))).toBe(false);

    const r = await c.call('POST', `/sessions/${session}/devices/${serial}/release`, { token: owner });
    expect(r.status).toBe(202);
    await logs.done;
    expect(logs.events.at(-1)).toEqual({ event: 'end', data: { reason: 'device_released' } });

    const after = await fetch(`${lab.engine.api}/sessions/${session}/devices/${serial}/logs?token=${owner}`);
    expect(after.status).toBe(409);
    expect(errorCode({ body: await after.json() } as never)).toBe('device_not_in_use');
  });

  it('refuses with 401 without a bearer and 404 for a serial the session does not hold', async () => {
    const { session } = await allocateInUse(c, owner, 'Pixel 5');
    expect((await fetch(`${lab.engine.api}/sessions/${session}/devices/${lab.serials[1]}/logs`)).status).toBe(401);
    const unknown = await fetch(`${lab.engine.api}/sessions/${session}/devices/nope/logs?token=${owner}`);
    expect(unknown.status).toBe(404);
  });

  it('is declared in the OpenAPI document as text/event-stream under Extensions', async () => {
    const doc = (await c.call('GET', '/openapi.json')).body;
    const op = doc.paths['/api/v1/sessions/{sessionId}/devices/{deviceId}/logs'].get;
    expect(op.tags).toEqual(['Extensions']);
    expect(Object.keys(op.responses['200'].content)).toEqual(['text/event-stream']);
  });
});
