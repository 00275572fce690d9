import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, errorCode } from '../support/engine.js';
import { adbOrSkip, allocateInUse, startLab, waitFor, type TestLab } from '../support/lab.js';
import { readEvents, startScriptedModel, type ClientEvent, type Script, type ScriptedModel } from '../support/scripted-model.js';

const hasAdb = adbOrSkip();
const kinds = (events: ClientEvent[]) => events.map((e) => e.event);
/** The center of the element a model reads in list_elements' text: `TextView "Wi-Fi" at (x, y) ...`. */
const centerIn = (listing: string, text: string) => {
  const m = new RegExp(`"${text}"[^\\n]* at \\((\\d+), (\\d+)\\)`).exec(listing);
  return m ? { x: Number(m[1]), y: Number(m[2]) } : undefined;
};

describe.skipIf(!hasAdb)('the assistant on a simulated phone', () => {
  let lab: TestLab;
  let c: ReturnType<typeof client>;
  let owner: string;
  let session: string;
  let serial: string;
  let chat: string;
  let model: ScriptedModel;
  let script: Script = () => ({ text: ['?'] });

  beforeAll(async () => {
    model = await startScriptedModel('openai', (body, i) => script(body, i));
    // Tool calls time out after 2 s here, so that the limit can be seen without a long wait.
    lab = await startLab([{ model: 'Pixel 7', osVersion: '14' }, { model: 'Pixel 5', osVersion: '12' }], { assistantToolTimeoutSeconds: 2 });
    c = client(lab.engine.api);
    owner = await c.login();
    ({ session, serial } = await allocateInUse(c, owner, 'Pixel 7'));
    const r = await c.call('POST', `/sessions/${session}/chats`, { token: owner, body: { title: 'drive', metadata: { deviceId: serial } } });
    expect(r.status).toBe(201);
    expect(r.body.metadata).toEqual({ deviceId: serial });
    chat = r.body.id;
  }, 60_000);
  afterAll(async () => {
    await lab?.stop();
    await model?.stop();
  });

  const phone = () => lab.phone(serial).state;
  const path = () => `/sessions/${session}/chats/${chat}`;
  const setProvider = (body: unknown) => c.call('PUT', '/lab/assistant', { token: owner, body });
  /** Posts with stream=true and reads every event. */
  const streamed = async (text: string) => {
    const res = await fetch(`${lab.engine.api}${path()}/messages?stream=true`, {
      method: 'POST',
      headers: { authorization: `Bearer ${owner}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text }),
    });
    expect(res.status).toBe(200);
    return (await readEvents(res)).events;
  };
  const sync = async (text: string) => {
    const r = await c.call('POST', `${path()}/messages?mode=sync`, { token: owner, body: { text } });
    expect(r.status).toBe(201);
    return r.body;
  };
  const home = () => c.call('POST', `/sessions/${session}/devices/${serial}/actions`, { token: owner, body: { type: 'pressButton', button: 'HOME' } });

  describe('offline (the default: no model configured)', () => {
    it('"open settings and tap Wi-Fi" runs real tool calls and the phone shows the Wi-Fi page', async () => {
      expect((await c.call('GET', '/lab/assistant', { token: owner })).body.provider).toBe('offline');
      await home();
      const events = await streamed('open settings and tap Wi-Fi');
      expect(kinds(events)).toEqual([
        'execution.started', 'assistant.message.started',
        'tool_call.created', 'tool_call.completed', // list_apps
        'tool_call.created', 'tool_call.completed', // launch_app
        'tool_call.created', 'tool_call.completed', // list_elements
        'tool_call.created', 'tool_call.completed', // tap
        'tool_call.created', 'tool_call.completed', // screenshot: the screen the commands left
        'assistant.message.delta', 'assistant.message.completed', 'execution.completed',
      ]);
      const message = events.at(-2)!.data.message;
      expect(message.toolCalls.map((t: { name: string; status: string }) => `${t.name}:${t.status}`)).toEqual([
        'list_apps:completed', 'launch_app:completed', 'list_elements:completed', 'tap:completed', 'screenshot:completed',
      ]);
      expect(message.toolCalls[4].result.image).toMatchObject({ contentType: 'image/png' });
      expect(message.toolCalls[1].arguments).toEqual({ packageName: 'com.android.settings' });
      expect(message.text).toMatch(/^Opened com\.android\.settings\. Tapped "Wi-Fi" at \(\d+, \d+\)\.$/);
      expect(phone().foregroundPackage).toBe('com.android.settings');
      expect(phone().settingsPage).toBe('wifi');
      const elements = await c.call('GET', `/sessions/${session}/devices/${serial}/elements`, { token: owner });
      expect(elements.body.data.some((e: { text: string }) => e.text === 'Use Wi-Fi')).toBe(true);
    });

    it('tap by coordinates, type, swipe, press, what\'s on screen, screen size, close', async () => {
      await home();
      let m = await sync('tap 120 300');
      expect(m.text).toBe('Tapped (120, 300).');
      expect(phone().lastTap).toEqual({ x: 120, y: 300 });

      m = await sync('swipe up');
      expect(m.toolCalls.map((t: { name: string }) => t.name)).toEqual(['screen_size', 'swipe', 'screenshot']);
      expect(m.text).toBe('Swiped up.');
      expect(phone().lastSwipe).toMatchObject({ x1: 360, x2: 360 });
      expect(phone().lastSwipe!.y1).toBeGreaterThan(phone().lastSwipe!.y2);

      m = await sync('open com.android.settings then press home');
      expect(m.text).toBe('Opened com.android.settings. Pressed HOME.');
      expect(phone().foregroundPackage).toBeUndefined();

      m = await sync("what's on screen?");
      expect(m.toolCalls[0].name).toBe('list_elements');
      expect(m.toolCalls[0].result.elements.length).toBeGreaterThan(0);
      expect(m.text).toMatch(/^On screen: .*Settings/);

      m = await sync('screen size');
      expect(m.text).toBe('The screen is 720x1280 pixels.');

      m = await sync('type hello');
      expect(m.toolCalls[0]).toMatchObject({ name: 'type_text', arguments: { text: 'hello' }, status: 'completed' });
      expect(m.text).toBe('Typed "hello".');

      await sync('open settings');
      m = await sync('close settings');
      expect(m.text).toBe('Stopped com.android.settings.');
      expect(phone().foregroundPackage).toBeUndefined();
    });

    it('"screenshot" stores a PNG the GUI can show, under the tool call', async () => {
      const m = await sync('screenshot');
      expect(m.text).toBe('Here is the screen.');
      const image = m.toolCalls[0].result.image;
      expect(image).toMatchObject({ contentType: 'image/png', url: `/api/v1${path()}/messages/${m.id}/tool-calls/${m.toolCalls[0].id}/image` });
      const res = await fetch(lab.engine.api.replace('/api/v1', '') + image.url, { headers: { authorization: `Bearer ${owner}` } });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('image/png');
      const png = PNG.sync.read(Buffer.from(await res.arrayBuffer()));
      expect([png.width, png.height]).toEqual([720, 1280]);
      // An <img> cannot send Authorization: the bearer may come as ?token=.
      expect((await fetch(`${lab.engine.api.replace('/api/v1', '')}${image.url}?token=${owner}`)).status).toBe(200);
      const stranger = await c.signup('image-stranger@chats.test');
      const refused = await fetch(lab.engine.api.replace('/api/v1', '') + image.url, { headers: { authorization: `Bearer ${stranger.token}` } });
      expect(refused.status).toBe(404);
      // The sweeper, past its grace period, keeps what a chat's history still shows. Only the sweep runs 2 h ahead:
      // the whole engine's clock moved there let the idle release take the phone on a slow CI machine.
      await lab.engine.engine.services.files.sweep(Date.now() + 2 * 60 * 60 * 1000);
      expect((await fetch(lab.engine.api.replace('/api/v1', '') + image.url, { headers: { authorization: `Bearer ${owner}` } })).status).toBe(200);
      // A data dir restored without its blobs: the image is gone, a 404 with the error body rather than a 500.
      rmSync(join(lab.engine.dataDir, 'blobs', image.sha256.slice(0, 2), image.sha256));
      const lost = await fetch(lab.engine.api.replace('/api/v1', '') + image.url, { headers: { authorization: `Bearer ${owner}` } });
      expect([lost.status, ((await lost.json()) as { error: { code: string } }).error.code]).toEqual([404, 'image_not_found']);
    });

    it('says plainly what it cannot do, and what is not on screen', async () => {
      await home();
      let m = await sync('book me a flight to Lisbon');
      expect(m.status).toBe('completed');
      expect(m.toolCalls).toEqual([]);
      expect(m.text).toMatch(/^I can't do "book me a flight to Lisbon" without a model\./);
      m = await sync('tap Nonexistent Button');
      expect(m.toolCalls.map((t: { name: string }) => t.name)).toEqual(['list_elements']);
      expect(m.text).toBe('I don\'t see "Nonexistent Button" on the screen.');
      m = await sync('open frobnicator');
      expect(m.text).toBe('I can\'t find an installed app called "frobnicator".');
    });
  });

  describe('with an OpenAI-compatible model', () => {
    beforeAll(async () => {
      expect((await setProvider({ provider: 'openai', endpoint: model.endpoint, model: 'scripted' })).status).toBe(200);
    });
    afterAll(async () => {
      await setProvider({ provider: 'offline' });
    });

    it('"open settings and tap Wi-Fi": the model reads the elements, taps, and the phone\'s screen changes', async () => {
      await home();
      const start = model.requests.length;
      script = (body, i) => {
        const turn = i - start;
        if (turn === 0) return { text: ['Opening Settings.'], toolCalls: [{ name: 'launch_app', arguments: { packageName: 'com.android.settings' } }] };
        if (turn === 1) return { toolCalls: [{ name: 'list_elements', arguments: {} }] };
        if (turn === 2) {
          const wifi = centerIn(body.messages.at(-1).content, 'Wi-Fi');
          return wifi ? { toolCalls: [{ name: 'tap', arguments: wifi }] } : { text: ['No Wi-Fi row.'] };
        }
        return { text: [' Wi-Fi settings', ' are open.'] };
      };
      const events = await streamed('open settings and tap Wi-Fi');
      expect(kinds(events)).toEqual([
        'execution.started', 'assistant.message.started', 'assistant.message.delta',
        'tool_call.created', 'tool_call.completed',
        'tool_call.created', 'tool_call.completed',
        'tool_call.created', 'tool_call.completed',
        'assistant.message.delta', 'assistant.message.delta',
        'assistant.message.completed', 'execution.completed',
      ]);
      expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i + 1));
      const message = events.at(-2)!.data.message;
      expect(message.text).toBe('Opening Settings. Wi-Fi settings are open.');
      expect(message.toolCalls.map((t: { name: string; status: string }) => `${t.name}:${t.status}`)).toEqual(['launch_app:completed', 'list_elements:completed', 'tap:completed']);
      expect(phone().settingsPage).toBe('wifi');
      // The model got the tools, and the element list as text: no image unless it asks for one.
      const first = model.requests[start]!.body;
      expect(first.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual([
        'list_elements', 'screenshot', 'tap', 'long_press', 'swipe', 'type_text', 'press_button', 'launch_app', 'terminate_app', 'list_apps', 'open_url', 'screen_size',
      ]);
      expect(JSON.stringify(model.requests.slice(start).map((r) => r.body))).not.toContain('image_url');
    });

    it('a screenshot the model asks for goes to it as an image', async () => {
      const start = model.requests.length;
      script = (_body, i) => (i === start ? { toolCalls: [{ name: 'screenshot', arguments: {} }] } : { text: ['I see it.'] });
      const m = await sync('look');
      expect(m.toolCalls[0]).toMatchObject({ name: 'screenshot', status: 'completed' });
      const second = model.requests[start + 1]!.body.messages;
      expect(second.at(-1).role).toBe('user');
      expect(second.at(-1).content[0].image_url.url).toMatch(/^data:image\/png;base64,iVBOR/);
    });

    it('bad tool arguments fail the tool call, not the execution; the model is told why', async () => {
      const start = model.requests.length;
      script = (_body, i) => (i === start ? { toolCalls: [{ name: 'tap', arguments: { x: -5 } }, { name: 'fly', arguments: {} }] } : { text: ['Sorry.'] });
      const m = await sync('tap somewhere odd');
      expect(m.status).toBe('completed');
      expect(m.toolCalls.map((t: { error?: { code: string } }) => t.error?.code)).toEqual(['invalid_arguments', 'unknown_tool']);
      const tools = model.requests[start + 1]!.body.messages.filter((x: { role: string }) => x.role === 'tool');
      expect(tools.map((x: { content: string }) => x.content)).toEqual([expect.stringMatching(/^Error: Invalid arguments for tap/), expect.stringMatching(/^Error: There is no tool named "fly"/)]);
    });

    it('a tool call past its timeout fails with a clear text, and the loop goes on', async () => {
      const start = model.requests.length;
      script = (_body, i) => (i === start ? { toolCalls: [{ name: 'long_press', arguments: { x: 10, y: 10, durationMs: 6000 } }] } : { text: ['It timed out.'] });
      const m = await sync('hold');
      expect(m.status).toBe('completed');
      expect(m.toolCalls[0]).toMatchObject({ status: 'failed', error: { code: 'tool_timeout', message: 'long_press did not finish within 2 s.' } });
    });

    it('cancel during a slow tool call stops within 1 s; the tool call and the message end cancelled', async () => {
      const start = model.requests.length;
      script = (_body, i) => (i === start ? { toolCalls: [{ name: 'long_press', arguments: { x: 11, y: 12, durationMs: 8000 } }] } : { text: ['never'] });
      const res = await fetch(`${lab.engine.api}${path()}/messages?stream=true`, {
        method: 'POST',
        headers: { authorization: `Bearer ${owner}`, 'content-type': 'application/json' },
        body: JSON.stringify({ text: 'hold long' }),
      });
      let resolveCreated!: (e: ClientEvent) => void;
      const created = new Promise<ClientEvent>((r) => (resolveCreated = r));
      const reading = readEvents(res, (e) => {
        if (e.event === 'tool_call.created') resolveCreated(e);
        return false;
      });
      const toolCall = (await created).data.toolCall;
      // Let the 8 s press begin on the phone.
      await new Promise((r) => setTimeout(r, 300));
      const t0 = performance.now();
      const r = await c.call('POST', `${path()}/messages/${toolCall.messageId}/cancel`, { token: owner });
      expect(performance.now() - t0).toBeLessThan(1000);
      expect(r.status).toBe(200);
      expect(r.body.status).toBe('cancelled');
      expect(r.body.toolCalls[0]).toMatchObject({ id: toolCall.id, status: 'cancelled', error: { code: 'cancelled' } });
      const { events } = await reading;
      expect(kinds(events).slice(-3)).toEqual(['tool_call.completed', 'assistant.message.completed', 'execution.completed']);
      expect(events.at(-1)!.data.status).toBe('cancelled');
      expect(model.requests.length).toBe(start + 1);
      // The phone let go too: the cancel closed the command's stream, so the 8 s press ended at once.
      await waitFor('the long press to end on the phone', () => phone().lastLongPress?.x === 11 && phone().lastLongPress?.y === 12, 1000);
      // The phone is free for the next message at once.
      script = () => ({ text: ['ok'] });
      expect((await sync('next')).status).toBe('completed');
    });
  });

  it('tools act for the caller: once the device is released, a tool call fails and the chat says so', async () => {
    const other = await allocateInUse(c, owner);
    const bound = (await c.call('POST', `/sessions/${other.session}/chats`, { token: owner, body: { metadata: { deviceId: other.serial } } })).body.id;
    expect((await c.call('POST', `/sessions/${other.session}/devices/${other.serial}/release`, { token: owner })).status).toBe(202);
    const r = await c.call('POST', `/sessions/${other.session}/chats/${bound}/messages?mode=sync`, { token: owner, body: { text: 'tap 1 1' } });
    expect(r.body.toolCalls[0]).toMatchObject({ name: 'tap', status: 'failed', error: { code: 'tool_failed' } });
    expect(r.body.toolCalls[0].error.message).toMatch(/released|in_use/);
    expect(r.body.text).toMatch(/^Tapping failed: /);
    // And a device that is not the session's cannot be bound at all.
    expect(errorCode(await c.call('POST', `/sessions/${other.session}/chats`, { token: owner, body: { metadata: { deviceId: serial } } }))).toBe('device_not_found');
  });
}, 120_000);
