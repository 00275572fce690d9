import { describe, expect, it } from 'vitest';
import { DEVICE_TOOLS } from '../tools.js';
import { offlineProvider } from './offline.js';
import type { HistoryItem, ModelToolCall } from './types.js';

/** Drives the interpreter as the agent loop does, answering each tool call from `results` by tool name. */
async function run(text: string, results: Record<string, unknown> = {}, failing: string[] = []) {
  const provider = offlineProvider();
  const history: HistoryItem[] = [{ role: 'user', text }];
  const calls: ModelToolCall[] = [];
  for (let step = 0; step < 20; step++) {
    const deltas: string[] = [];
    const turn = await provider.turn({ system: '', history, tools: DEVICE_TOOLS, onDelta: (d) => deltas.push(d), signal: new AbortController().signal });
    if (turn.toolCalls.length === 0) {
      expect(deltas.join('')).toBe(turn.text);
      return { calls, text: turn.text };
    }
    history.push({ role: 'assistant', text: turn.text, toolCalls: turn.toolCalls });
    for (const call of turn.toolCalls) {
      calls.push(call);
      const failed = failing.includes(call.name);
      history.push({ role: 'tool', toolCallId: call.id, name: call.name, content: '', ...(failed ? { error: 'boom' } : { result: results[call.name] ?? { ok: true } }) });
    }
  }
  throw new Error('the interpreter did not finish');
}

const element = (text: string, x: number, y: number) => ({ text, contentDescription: '', resourceId: '', className: 'android.widget.TextView', bounds: { x, y, width: 100, height: 40 }, clickable: true });

describe('the offline interpreter', () => {
  it('taps coordinates, types text as given, presses buttons', async () => {
    expect(await run('tap 120 300')).toEqual({
      calls: [{ id: 'offline_0', name: 'tap', arguments: { x: 120, y: 300 } }, { id: 'offline_1', name: 'screenshot', arguments: {} }],
      text: 'Tapped (120, 300).',
    });
    expect((await run('type "Hello, World"')).calls[0]!.arguments).toEqual({ text: 'Hello, World' });
    expect((await run('Press the Back button.')).calls[0]!.arguments).toEqual({ button: 'BACK' });
    expect((await run('go home')).calls[0]!.arguments).toEqual({ button: 'HOME' });
  });

  it('taps an element by its text: exact before prefix before contains, at its center', async () => {
    const elements = [element('Wi-Fi calling', 0, 0), element('Wi-Fi', 0, 100)];
    const r = await run('tap Wi-Fi', { list_elements: { elements } });
    expect(r.calls.map((c) => c.name)).toEqual(['list_elements', 'tap', 'screenshot']);
    expect(r.calls[1]!.arguments).toEqual({ x: 50, y: 120 });
    expect(r.text).toBe('Tapped "Wi-Fi" at (50, 120).');
  });

  it('splits at "and" or "then" only before a command, so a name with "and" stays whole', async () => {
    const elements = [element('Terms and Conditions', 0, 0)];
    const r = await run('tap Terms and Conditions then press home', { list_elements: { elements } });
    expect(r.calls.map((c) => c.name)).toEqual(['list_elements', 'tap', 'press_button', 'screenshot']);
    expect(r.text).toBe('Tapped "Terms and Conditions" at (50, 20). Pressed HOME.');
  });

  it('opens an app by name through the list of apps, preferring the app over a provider of the same name', async () => {
    const apps = { apps: ['com.android.providers.settings', 'com.android.settings', 'com.android.chrome'] };
    const r = await run('open settings', { list_apps: apps });
    expect(r.calls.map((c) => [c.name, c.arguments])).toEqual([['list_apps', {}], ['launch_app', { packageName: 'com.android.settings' }], ['screenshot', {}]]);
    expect((await run('open https://example.com/a?b=1')).calls[0]).toMatchObject({ name: 'open_url', arguments: { url: 'https://example.com/a?b=1' } });
    expect((await run('launch com.example.app')).calls[0]).toMatchObject({ name: 'launch_app', arguments: { packageName: 'com.example.app' } });
  });

  it('swipes relative to the screen; scrolling down moves the finger up', async () => {
    const size = { screen_size: { ok: true, width: 1000, height: 2000 } };
    expect((await run('swipe up', size)).calls[1]!.arguments).toEqual({ fromX: 500, fromY: 1600, toX: 500, toY: 400 });
    expect((await run('scroll down', size)).calls[1]!.arguments).toEqual({ fromX: 500, fromY: 1600, toX: 500, toY: 400 });
    expect((await run('swipe left', size)).calls[1]!.arguments).toEqual({ fromX: 800, fromY: 1000, toX: 200, toY: 1000 });
  });

  it('ends a request that acted on the screen with a screenshot of it; one that only read the screen, without', async () => {
    expect((await run('screen size', { screen_size: { width: 1, height: 2 } })).calls.map((c) => c.name)).toEqual(['screen_size']);
    expect((await run('list apps', { list_apps: { apps: [] } })).calls.map((c) => c.name)).toEqual(['list_apps']);
    const failed = await run('press back', {}, ['screenshot']);
    expect(failed.calls.map((c) => c.name)).toEqual(['press_button', 'screenshot']);
    expect(failed.text).toBe('Pressed BACK. Taking a screenshot failed: boom');
  });

  it('stops at the first failing tool call and says why; says plainly what it cannot do', async () => {
    const r = await run('press home and tap 1 2', {}, ['press_button']);
    expect(r.calls.map((c) => c.name)).toEqual(['press_button']);
    expect(r.text).toBe('Pressing HOME failed: boom');
    const no = await run('order a pizza');
    expect(no.calls).toEqual([]);
    expect(no.text).toMatch(/^I can't do "order a pizza" without a model\. Without a model I understand/);
  });
});
