import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApk } from '../support/app-fixtures.js';
import { client, errorCode } from '../support/engine.js';
import { adbOrSkip, startLab, waitFor, type TestLab } from '../support/lab.js';

const hasAdb = adbOrSkip();

type Content = { type: string; text?: string; data?: string; mimeType?: string };
interface Result {
  content: Content[];
  isError?: boolean;
}

/** An MCP client of the SDK, over Streamable HTTP, with the bearer as Claude Code's --header sends it. */
async function connect(url: string, bearer: string, headers: Record<string, string> = {}) {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${bearer}`, ...headers } } });
  const mcp = new Client({ name: 'benchtop-test', version: '1.0.0' });
  await mcp.connect(transport);
  const call = async (name: string, args: Record<string, unknown> = {}) => (await mcp.callTool({ name, arguments: args })) as Result;
  const textOf = async (name: string, args: Record<string, unknown> = {}) => {
    const r = await call(name, args);
    expect(r.isError, `${name}: ${r.content[0]?.text}`).toBeFalsy();
    return r.content[0]!.text!;
  };
  return { mcp, transport, call, textOf, json: async (name: string, args: Record<string, unknown> = {}) => JSON.parse(await textOf(name, args)) };
}

const elementsOf = (text: string) => JSON.parse(text.replace(/^Found these elements on screen: /, '')) as {
  ref: string;
  type: string;
  text?: string;
  identifier?: string;
  coordinates: { x: number; y: number; width: number; height: number };
}[];

describe.skipIf(!hasAdb)('/mcp: MCP over Streamable HTTP, with the SDK\'s own client', () => {
  let lab: TestLab;
  let c: ReturnType<typeof client>;
  let url: string;
  let key: string;
  let other: string;
  let agent: Awaited<ReturnType<typeof connect>>;
  let serial: string;
  let sessionId: string;

  beforeAll(async () => {
    lab = await startLab([{ model: 'Pixel 7', osVersion: '14' }, { model: 'Pixel 5', osVersion: '12' }]);
    c = client(lab.engine.api);
    url = lab.engine.api.replace(/\/api\/v1$/, '/mcp');
    key = await c.createKey(await c.login());
    const stranger = await c.signup('stranger@mcp.test');
    other = await c.createKey(stranger.token, stranger.personalOrgId);
    agent = await connect(url, key);
  }, 60_000);
  afterAll(async () => {
    await agent?.mcp.close();
    await lab?.stop();
  });

  it('an unauthenticated POST is 401 with the API\'s error body; a bad bearer too', async () => {
    const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } };
    for (const headers of [{}, { authorization: 'Bearer mob_nope' }, { authorization: 'Basic abc' }] as Record<string, string>[]) {
      const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body: JSON.stringify(initialize) });
      expect(r.status).toBe(401);
      expect(errorCode({ status: r.status, body: await r.json(), headers: r.headers })).toBe('unauthorized');
    }
    // The SDK's client fails to connect without the header.
    await expect(connect(url, 'mob_nope')).rejects.toThrow();
  });

  it('malformed requests are 4xx, never a 500; a web page of another origin is refused', async () => {
    const post = (headers: Record<string, string>, body: string) =>
      fetch(url, { method: 'POST', headers: { authorization: `Bearer ${key}`, accept: 'application/json, text/event-stream', 'content-type': 'application/json', ...headers }, body });
    const notJson = await post({}, '{"jsonrpc":');
    expect(notJson.status).toBe(400);
    expect((await notJson.json()).error.code).toBe(-32700);
    const noSession = await post({}, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }));
    expect(noSession.status).toBe(400);
    expect(errorCode({ status: 400, body: await noSession.json(), headers: noSession.headers })).toBe('mcp_session_required');
    const text = await post({ 'content-type': 'text/plain', 'mcp-session-id': agent.transport.sessionId! }, 'hello');
    expect(text.status).toBe(415);
    await text.body?.cancel();
    const page = await post({ origin: 'https://evil.example' }, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }));
    expect(page.status).toBe(403);
    expect(errorCode({ status: 403, body: await page.json(), headers: page.headers })).toBe('forbidden_origin');
  });

  it('lists mobile-mcp\'s tools by their names, with JSON-schema arguments, and the lab_* tools', async () => {
    const { tools } = await agent.mcp.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining([
      'mobile_list_available_devices', 'mobile_list_remote_devices', 'mobile_allocate_remote_device', 'mobile_release_remote_device',
      'mobile_take_screenshot', 'mobile_list_elements_on_screen', 'mobile_click_on_screen_at_coordinates', 'mobile_double_tap_on_screen',
      'mobile_long_press_on_screen_at_coordinates', 'mobile_swipe_on_screen', 'mobile_type_keys', 'mobile_press_button', 'mobile_open_url',
      'mobile_launch_app', 'mobile_terminate_app', 'mobile_list_apps', 'mobile_install_app', 'mobile_uninstall_app', 'mobile_get_screen_size',
      'mobile_set_orientation', 'mobile_get_orientation', 'mobile_get_device_logs',
      'lab_allocate_mac_instance', 'lab_exec_on_mac_instance', 'lab_release_mac_instance', 'lab_list_test_results', 'lab_get_test_result',
      'lab_list_files', 'lab_list_apps', 'lab_restart_device',
    ]));
    const click = tools.find((t) => t.name === 'mobile_click_on_screen_at_coordinates')!;
    expect(click.inputSchema).toMatchObject({ type: 'object', properties: { device: { type: 'string' }, x: { type: 'number' }, y: { type: 'number' }, ref: { type: 'string' } }, required: ['device'] });
    expect(tools.find((t) => t.name === 'mobile_type_keys')!.inputSchema.required).toEqual(['device', 'text', 'submit']);
  });

  it('lists the lab\'s phones as free, allocates one (waiting until in_use, in a session REST sees), and lists it as held', async () => {
    const remote = await agent.json('mobile_list_remote_devices');
    expect(remote.devices).toHaveLength(2);
    expect(remote.devices.every((d: { available: boolean; platform: string }) => d.available && d.platform === 'android')).toBe(true);
    expect((await agent.json('mobile_list_available_devices')).devices).toEqual([]);

    const allocated = await agent.json('mobile_allocate_remote_device', { platform: 'android', name: 'Pixel*', version: ['>=13'] });
    expect(allocated).toMatchObject({ status: 'in_use', name: 'Pixel 7', platform: 'android', version: '14' });
    serial = allocated.device;
    sessionId = allocated.sessionId;
    expect(lab.serials).toContain(serial);

    const held = (await agent.json('mobile_list_available_devices')).devices;
    expect(held).toEqual([expect.objectContaining({ id: serial, state: 'online', status: 'in_use', name: 'Pixel 7', platform: 'android', version: '14' })]);
    const r = await c.call('GET', `/sessions/${sessionId}/devices/${serial}`, { token: key });
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('in_use');
    expect((await agent.json('mobile_list_remote_devices')).devices.find((d: { id: string }) => d.id === serial)).toMatchObject({ available: false, heldByYou: { sessionId } });
  });

  it('takes a screenshot as an image block: a PNG of the phone\'s screen', async () => {
    const viaRest = async () => {
      const rest = await fetch(`${lab.engine.api}/sessions/${sessionId}/devices/${serial}/screenshot`, { headers: { authorization: `Bearer ${key}` } });
      return PNG.sync.read(Buffer.from(await rest.arrayBuffer())).data;
    };
    const before = await viaRest();
    const r = await agent.call('mobile_take_screenshot', { device: serial });
    const after = await viaRest();
    expect(r.isError).toBeFalsy();
    expect(r.content).toHaveLength(1);
    const [block] = r.content;
    expect(block).toMatchObject({ type: 'image', mimeType: 'image/png' });
    const png = PNG.sync.read(Buffer.from(block!.data!, 'base64'));
    expect([png.width, png.height]).toEqual([720, 1280]);
    // The same pixels as a REST screenshot of the same screen (the status bar's clock may turn between two of them).
    expect(before.equals(png.data) || after.equals(png.data)).toBe(true);
  });

  it('lists elements with coordinates and refs; clicks by ref and by coordinates', async () => {
    await agent.textOf('mobile_press_button', { device: serial, button: 'HOME' });
    const elements = elementsOf(await agent.textOf('mobile_list_elements_on_screen', { device: serial }));
    const settings = elements.find((e) => e.text === 'Settings')!;
    expect(settings).toMatchObject({ ref: expect.stringMatching(/^e\d+$/), coordinates: { width: expect.any(Number), height: expect.any(Number) } });
    expect(settings.coordinates.width).toBeGreaterThan(0);

    const byRef = await agent.textOf('mobile_click_on_screen_at_coordinates', { device: serial, ref: settings.ref });
    const { x, y, width, height } = settings.coordinates;
    const center = { x: x + Math.floor(width / 2), y: y + Math.floor(height / 2) };
    expect(byRef).toBe(`Clicked on screen at coordinates: ${center.x}, ${center.y}`);
    expect(lab.phone(serial).state.foregroundPackage).toBe('com.android.settings');
    expect(lab.phone(serial).state.lastTap).toEqual(center);

    // Coordinates as agents send them: strings and fractions are coerced and rounded, as mobile-mcp does.
    await agent.textOf('mobile_click_on_screen_at_coordinates', { device: serial, x: '101.6', y: 202 });
    expect(lab.phone(serial).state.lastTap).toEqual({ x: 102, y: 202 });
    await agent.textOf('mobile_long_press_on_screen_at_coordinates', { device: serial, x: 100, y: 200, duration: 700 });
    expect(lab.phone(serial).state.lastLongPress).toEqual({ x: 100, y: 200 });
    await agent.textOf('mobile_swipe_on_screen', { device: serial, direction: 'up' });
    expect(lab.phone(serial).state.lastSwipe).toEqual({ x1: 360, y1: 1024, x2: 360, y2: 256, durationMs: 1000 });
    await agent.textOf('mobile_swipe_on_screen', { device: serial, direction: 'left', x: 600, y: 640, distance: 300 });
    expect(lab.phone(serial).state.lastSwipe).toEqual({ x1: 600, y1: 640, x2: 300, y2: 640, durationMs: 1000 });
  });

  it('launches an app, types into it by ref, and reads the screen, apps, size and orientation', async () => {
    expect(await agent.textOf('mobile_launch_app', { device: serial, packageName: 'com.example.notes' })).toBe('Launched app com.example.notes');
    expect(lab.phone(serial).state.foregroundPackage).toBe('com.example.notes');
    const field = elementsOf(await agent.textOf('mobile_list_elements_on_screen', { device: serial })).find((e) => e.identifier === 'com.example.notes:id/note_text')!;
    await agent.textOf('mobile_click_on_screen_at_coordinates', { device: serial, ref: field.ref });
    expect(await agent.textOf('mobile_type_keys', { device: serial, text: 'hello from mcp', submit: false })).toBe('Typed text: hello from mcp');
    expect(lab.phone(serial).state.notesText).toBe('hello from mcp');
    expect(elementsOf(await agent.textOf('mobile_list_elements_on_screen', { device: serial })).some((e) => e.text === 'hello from mcp')).toBe(true);

    expect(await agent.textOf('mobile_list_apps', { device: serial })).toMatch(/^Found these apps on device: .*com\.example\.notes/);
    expect(await agent.textOf('mobile_get_screen_size', { device: serial })).toBe('Screen size is 720x1280 pixels');
    await agent.textOf('mobile_set_orientation', { device: serial, orientation: 'landscape' });
    expect(await agent.textOf('mobile_get_orientation', { device: serial })).toBe('Current device orientation is landscape');
    await agent.textOf('mobile_set_orientation', { device: serial, orientation: 'portrait' });
    await agent.textOf('mobile_open_url', { device: serial, url: 'https://example.com/a?b=1' });
    expect(lab.phone(serial).state.browserUrl).toBe('https://example.com/a?b=1');
    await agent.textOf('mobile_terminate_app', { device: serial, packageName: 'com.example.notes' });
    expect(lab.phone(serial).state.foregroundPackage).not.toBe('com.example.notes');
  });

  it('installs a stored file by its id (from lab_list_files), lists it among the apps, and uninstalls it', async () => {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(buildApk({ packageName: 'com.example.mcp', label: 'From MCP', versionCode: 2 }))]), 'mcp.apk');
    const uploaded = await (await fetch(`${lab.engine.api}/files/upload`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form })).json();
    await waitFor('the file to be ready', async () => (await agent.json('lab_list_files')).files.find((f: { id: string; status: string }) => f.id === uploaded.id && f.status === 'ready'));
    expect((await agent.json('lab_list_apps', { platform: 'android' })).apps).toEqual([expect.objectContaining({ bundleId: 'com.example.mcp', files: [expect.objectContaining({ id: uploaded.id })] })]);

    expect(await agent.textOf('mobile_install_app', { device: serial, path: uploaded.id })).toBe(`Installed app com.example.mcp from ${uploaded.id}`);
    expect(lab.phone(serial).state.packages).toContain('com.example.mcp');
    expect(await agent.textOf('mobile_uninstall_app', { device: serial, bundle_id: 'com.example.mcp' })).toBe('Uninstalled app com.example.mcp');
    expect(lab.phone(serial).state.packages).not.toContain('com.example.mcp');
  });

  it('lists test results and reads one with its assets and their download paths; another organization\'s is not found', async () => {
    expect((await agent.json('lab_list_test_results')).testResults).toEqual([]);
    const result = (await c.call('POST', '/test-results', { token: key, body: { name: 'smoke', status: 'failed' } })).body;
    const form = new FormData();
    form.append('name', 'log.txt');
    form.append('file', new Blob(['boom']), 'log.txt');
    const asset = await (await fetch(`${lab.engine.api}/test-results/${result.id}/assets`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form })).json();
    expect((await agent.json('lab_list_test_results', { status: 'failed' })).testResults).toEqual([expect.objectContaining({ id: result.id, name: 'smoke' })]);
    const read = await agent.json('lab_get_test_result', { id: result.id });
    expect(read).toMatchObject({ id: result.id, status: 'failed', assets: [{ id: asset.id, name: 'log.txt', size: 4, download: `/api/v1/test-results/${result.id}/assets/${asset.id}` }] });
    const stranger = await connect(url, other);
    const r = await stranger.call('lab_get_test_result', { id: result.id });
    expect(r.isError).toBe(true);
    expect(r.content[0]!.text).toMatch(/lab_list_test_results/);
    await stranger.mcp.close();
  });

  it('bad arguments and stale refs are tool errors that say what to do next, never protocol failures', async () => {
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ['mobile_click_on_screen_at_coordinates', { device: serial }, /Give both x and y/],
      ['mobile_click_on_screen_at_coordinates', { device: serial, ref: 'e9999' }, /List the elements again/],
      ['mobile_click_on_screen_at_coordinates', { device: serial, x: 'left', y: 1 }, /Invalid arguments.*x must be number/],
      ['mobile_press_button', { device: serial, button: 'MENU' }, /Unknown button "MENU". Use one of: HOME/],
      ['mobile_launch_app', { device: serial, packageName: 'x; rm -rf /' }, /not a valid launchApp.*call again/],
      ['mobile_take_screenshot', { device: 'emulator-5554' }, /No device "emulator-5554" is held by your organization\. Call mobile_list_available_devices/],
      ['mobile_allocate_remote_device', { platform: 'android', name: 'Galaxy S99' }, /No device in this lab matches.*mobile_list_remote_devices/],
      ['mobile_install_app', { device: serial, path: '00000000-0000-4000-8000-000000000000' }, /lab_list_files/],
      ['lab_exec_on_mac_instance', { instance: 'nope', command: 'ls' }, /lab_allocate_mac_instance/],
    ];
    for (const [name, args, message] of cases) {
      const r = await agent.call(name, args);
      expect(r.isError, `${name} ${JSON.stringify(args)}`).toBe(true);
      expect(r.content[0]!.text, name).toMatch(message);
    }
    // The phone's log since the allocation: the taps and app starts of the tests above are in it.
    const logs = await agent.call('mobile_get_device_logs', { device: serial, lines: 500 });
    expect(logs.isError).toBeFalsy();
    const { lines } = JSON.parse(logs.content[0]!.text as string) as { lines: { tag: string; level: string; message: string }[] };
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.some((l) => l.tag === 'ActivityManager' || l.tag === 'ActivityTaskManager')).toBe(true);
  });

  it('another organization\'s key cannot see, drive, release or join the phone\'s session', async () => {
    const stranger = await connect(url, other);
    try {
      expect((await stranger.json('mobile_list_available_devices')).devices).toEqual([]);
      const seen = (await stranger.json('mobile_list_remote_devices')).devices.find((d: { id: string }) => d.id === serial);
      expect(seen).toMatchObject({ available: false });
      expect(seen.heldByYou).toBeUndefined();
      for (const [name, args] of [
        ['mobile_take_screenshot', { device: serial }],
        ['mobile_list_elements_on_screen', { device: serial }],
        ['mobile_click_on_screen_at_coordinates', { device: serial, x: 10, y: 10 }],
        ['mobile_type_keys', { device: serial, text: 'x', submit: false }],
        ['mobile_release_remote_device', { device: serial }],
        ['lab_restart_device', { device: serial }],
      ] as const) {
        const r = await stranger.call(name, args);
        expect(r.isError, name).toBe(true);
        // Exactly what an unknown serial gets: the phone's existence does not leak.
        expect(r.content[0]!.text, name).toBe(`No device "${serial}" is held by your organization. Call mobile_list_available_devices to see the phones your organization holds, or mobile_allocate_remote_device to take one.`);
      }
      expect(lab.phone(serial).state.lastTap).not.toEqual({ x: 10, y: 10 });

      // The first agent's MCP session id is not the stranger's to use.
      const r = await fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${other}`, 'mcp-session-id': agent.transport.sessionId!, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'mobile_take_screenshot', arguments: { device: serial } } }),
      });
      expect(r.status).toBe(404);
      expect(errorCode({ status: r.status, body: await r.json(), headers: r.headers })).toBe('mcp_session_not_found');
    } finally {
      await stranger.mcp.close();
    }
    // An API key bound to one organization cannot pick another with X-Organization-Id, as in REST.
    await expect(connect(url, key, { 'x-organization-id': (await c.signup('third@mcp.test')).personalOrgId })).rejects.toThrow(/403|wrong_organization/);
  });

  // Last before the release: a restart clears the phone's log, which the test of bad arguments reads.
  it('lab_restart_device restarts the phone: it stays allocated, comes back with no app open, and answers tools again', async () => {
    await agent.textOf('mobile_launch_app', { device: serial, packageName: 'com.example.notes' });
    expect(lab.phone(serial).state.foregroundPackage).toBe('com.example.notes');
    expect(await agent.textOf('lab_restart_device', { device: serial })).toBe(`Restarted device ${serial}; it is back and ready`);
    expect(lab.phone(serial).state.foregroundPackage).toBeUndefined();
    expect(lab.phone(serial).state.screen).toBe('home');
    expect((await agent.json('mobile_list_available_devices')).devices.map((d: { id: string }) => d.id)).toContain(serial);
    expect(await agent.textOf('mobile_get_screen_size', { device: serial })).toBe('Screen size is 720x1280 pixels');
  });

  it('releases the phone: it is free again, and no longer driven', async () => {
    expect(await agent.textOf('mobile_release_remote_device', { device: serial })).toBe(`Released device ${serial}.`);
    expect((await agent.json('mobile_list_available_devices')).devices).toEqual([]);
    expect((await c.call('GET', `/sessions/${sessionId}/devices/${serial}`, { token: key })).body.status).toBe('released');
    const r = await agent.call('mobile_take_screenshot', { device: serial });
    expect(r.isError).toBe(true);
  });

  it('GET /mcp opens the session\'s SSE stream, for its owner only; an open stream does not hold the engine\'s stop', async () => {
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const init = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
    });
    expect(init.status).toBe(200);
    expect((await init.json()).result.serverInfo.name).toBe('benchtop');
    const id = init.headers.get('mcp-session-id')!;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const session = { ...headers, 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' };
    expect((await fetch(url, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).status).toBe(202);

    const missing = await fetch(url, { headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' } });
    expect(missing.status).toBe(400);
    expect(errorCode({ status: 400, body: await missing.json(), headers: missing.headers })).toBe('mcp_session_required');
    const foreign = await fetch(url, { headers: { ...session, authorization: `Bearer ${other}`, accept: 'text/event-stream' } });
    expect(foreign.status).toBe(404);
    await foreign.body?.cancel();

    // Left open: afterAll's engine stop must end it rather than wait for it.
    const stream = await fetch(url, { headers: { ...session, accept: 'text/event-stream' } });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toBe('text/event-stream');
  });

  it('DELETE ends the session: its id is then unknown', async () => {
    const second = await connect(url, key);
    const id = second.transport.sessionId!;
    await second.transport.terminateSession();
    const r = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'mcp-session-id': id, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(r.status).toBe(404);
    await second.mcp.close();
  });
});
