import type { UiElement } from '../../../../shared/api/devices.js';
import type { HistoryItem, ModelToolCall, Provider, Turn } from './types.js';

/**
 * The assistant with no model: a command interpreter for direct commands ("tap Settings", "type hello", "swipe up",
 * "open com.android.settings", "what's on screen"), several at once with "and" or "then". It answers through the
 * same turns as a model, so its tool calls and events are those a model would cause. It replays the tool results
 * of the current message on every turn to find where it is, which keeps it stateless like a model endpoint.
 * A request that acted on the phone ends with a screenshot: with no model to describe it, the chat shows the screen
 * the commands left.
 */

type Call = Omit<ModelToolCall, 'id'>;
type Step = { call: Call; failing: string } | { say: string };
/** The next step of a command, given the results of its earlier calls. */
type Command = (results: unknown[]) => Step;

const VERBS = 'tap|click|long[- ]press|press|push|type|enter|write|swipe|scroll|open|launch|start|close|stop|terminate|kill|take|screenshot|what|list|show|describe|go|screen|help';
/** Splits "open settings and tap Wi-Fi" at a joiner followed by a command verb, so "tap Terms and Conditions" stays whole. */
const SPLIT = new RegExp(`\\s*(?:,|;|\\band then\\b|\\bthen\\b|\\band\\b)\\s*(?=(?:${VERBS})\\b)`, 'i');

const BUTTONS: Record<string, string> = {
  home: 'HOME', back: 'BACK', enter: 'ENTER', 'volume up': 'VOLUME_UP', 'volume down': 'VOLUME_DOWN', power: 'POWER',
  recents: 'APP_SWITCH', 'app switch': 'APP_SWITCH', 'app switcher': 'APP_SWITCH',
};

const HELP =
  'Without a model I understand direct commands: "tap 120 300", "tap Settings", "long press Settings", "type hello", ' +
  '"swipe up" (down, left, right), "press home" (back, enter, power, volume up, volume down, recents), ' +
  '"open com.android.settings" or "open settings", "open https://example.com", "close <app>", "list apps", "screenshot", ' +
  '"what\'s on screen" and "screen size", several at once joined with "and" or "then". For anything else, the lab owner ' +
  'can configure a model under /api/v1/lab/assistant.';

const HELP_REQUEST = /^(help|what can you do\??)$/i;

/** The tools that change what is on the screen. */
const ACTIONS = new Set(['tap', 'long_press', 'swipe', 'type_text', 'press_button', 'launch_app', 'terminate_app', 'open_url']);

const unquote = (s: string) => s.trim().replace(/^["'“”‘’](.*)["'“”‘’]$/, '$1');
const isPackage = (s: string) => /^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)+$/.test(s);
const isUrl = (s: string) => /^[a-z][a-z0-9+.-]*:\/\/\S+$/i.test(s);
const elementsOf = (result: unknown) => ((result as { elements?: UiElement[] })?.elements ?? []);
const center = (e: UiElement) => ({ x: e.bounds.x + Math.round(e.bounds.width / 2), y: e.bounds.y + Math.round(e.bounds.height / 2) });

/** The element a person means by `name`: its exact text or label, else the first that starts with it, else contains it. */
function findElement(elements: UiElement[], name: string): UiElement | undefined {
  const want = name.toLowerCase();
  const labels = (e: UiElement) => [e.text, e.contentDescription].map((s) => s.toLowerCase()).filter(Boolean);
  return (
    elements.find((e) => labels(e).some((l) => l === want)) ??
    elements.find((e) => labels(e).some((l) => l.startsWith(want))) ??
    elements.find((e) => labels(e).some((l) => l.includes(want)))
  );
}

/** iPhone apps whose bundle ids do not say their names. */
const IOS_APPS: Record<string, string> = { settings: 'com.apple.Preferences', safari: 'com.apple.mobilesafari', notes: 'com.apple.mobilenotes' };

/** The installed package a name like "settings" or "Google Chrome" means. */
function findPackage(packages: string[], name: string): string | undefined {
  const want = name.toLowerCase().replace(/[^a-z0-9]/g, '');
  const ios = IOS_APPS[want];
  if (ios && packages.includes(ios)) return ios;
  const segments = (p: string) => p.toLowerCase().split('.');
  // The shortest match is the app itself: com.android.settings, not com.android.providers.settings.
  const shortest = (matches: string[]) => matches.sort((a, b) => a.length - b.length)[0];
  return (
    shortest(packages.filter((p) => segments(p).at(-1) === want)) ??
    shortest(packages.filter((p) => segments(p).includes(want))) ??
    shortest(packages.filter((p) => p.toLowerCase().replace(/\./g, '').includes(want)))
  );
}

const single = (call: Call, failing: string, said: (result: unknown) => string): Command => (results) =>
  results.length === 0 ? { call, failing } : { say: said(results[0]) };

/** Resolves an app name through list_apps, then runs `then` with the package. */
const withPackage = (name: string, then: (pkg: string) => Command): Command => {
  if (isPackage(name)) return then(name);
  return (results) => {
    if (results.length === 0) return { call: { name: 'list_apps', arguments: {} }, failing: 'Listing the apps failed' };
    const pkg = findPackage(((results[0] as { apps?: string[] })?.apps ?? []), name);
    if (!pkg) return { say: `I can't find an installed app called "${name}".` };
    return then(pkg)(results.slice(1));
  };
};

/** Finds an element by its text through list_elements, then acts at its center. */
const atElement = (name: string, tool: 'tap' | 'long_press', done: string): Command => (results) => {
  if (results.length === 0) return { call: { name: 'list_elements', arguments: {} }, failing: 'Reading the screen failed' };
  const element = findElement(elementsOf(results[0]), name);
  if (!element) return { say: `I don't see "${name}" on the screen.` };
  const { x, y } = center(element);
  if (results.length === 1) return { call: { name: tool, arguments: { x, y } }, failing: `${done} "${name}" failed` };
  return { say: `${done} "${element.text || element.contentDescription}" at (${x}, ${y}).` };
};

function parse(command: string): Command | undefined {
  const c = command.trim().replace(/[.!]+$/, '').replace(/\s+/g, ' ');
  let m: RegExpExecArray | null;
  if (HELP_REQUEST.test(c)) return () => ({ say: HELP });
  if ((m = /^(?:tap|click)(?: on)? (\d+)[ ,]+(\d+)$/i.exec(c))) {
    const [x, y] = [Number(m[1]), Number(m[2])];
    return single({ name: 'tap', arguments: { x, y } }, 'Tapping failed', () => `Tapped (${x}, ${y}).`);
  }
  if ((m = /^long[- ]press(?: on)? (\d+)[ ,]+(\d+)$/i.exec(c))) {
    const [x, y] = [Number(m[1]), Number(m[2])];
    return single({ name: 'long_press', arguments: { x, y } }, 'Long-pressing failed', () => `Long-pressed (${x}, ${y}).`);
  }
  if ((m = /^long[- ]press(?: on)? (.+)$/i.exec(c))) return atElement(unquote(m[1]!), 'long_press', 'Long-pressed');
  if ((m = /^(?:press|push|hit|go)(?: the)? (home|back|enter|volume up|volume down|power|recents|app switcher|app switch)(?: button| key)?$/i.exec(c))) {
    const button = BUTTONS[m[1]!.toLowerCase()]!;
    return single({ name: 'press_button', arguments: { button } }, `Pressing ${button} failed`, () => `Pressed ${button}.`);
  }
  if ((m = /^(?:tap|click)(?: on)? (.+)$/i.exec(c))) return atElement(unquote(m[1]!), 'tap', 'Tapped');
  if ((m = /^(?:type|enter|write) (.+)$/is.exec(command.trim()))) {
    const text = unquote(m[1]!);
    return single({ name: 'type_text', arguments: { text } }, 'Typing failed', () => `Typed "${text}".`);
  }
  if ((m = /^(swipe|scroll) (up|down|left|right)$/i.exec(c))) {
    // Scrolling down moves the finger up, as on a touch screen.
    const opposite: Record<string, string> = { up: 'down', down: 'up', left: 'right', right: 'left' };
    const direction = m[1]!.toLowerCase() === 'scroll' ? opposite[m[2]!.toLowerCase()]! : m[2]!.toLowerCase();
    return (results) => {
      if (results.length === 0) return { call: { name: 'screen_size', arguments: {} }, failing: 'Reading the screen size failed' };
      const { width = 720, height = 1280 } = results[0] as { width?: number; height?: number };
      const [cx, cy] = [Math.round(width / 2), Math.round(height / 2)];
      const [dx, dy] = [Math.round(width * 0.3), Math.round(height * 0.3)];
      const to = { up: [cx, cy - dy], down: [cx, cy + dy], left: [cx - dx, cy], right: [cx + dx, cy] }[direction]!;
      const from = { up: [cx, cy + dy], down: [cx, cy - dy], left: [cx + dx, cy], right: [cx - dx, cy] }[direction]!;
      if (results.length === 1) return { call: { name: 'swipe', arguments: { fromX: from[0], fromY: from[1], toX: to[0], toY: to[1] } }, failing: 'Swiping failed' };
      return { say: `Swiped ${direction}.` };
    };
  }
  if ((m = /^(?:open|go to|visit)(?: the)?(?: url)? (\S+)$/i.exec(c)) && isUrl(m[1]!)) {
    const url = m[1]!;
    return single({ name: 'open_url', arguments: { url } }, 'Opening the URL failed', () => `Opened ${url}.`);
  }
  if ((m = /^(?:open|launch|start)(?: the)? (.+?)(?: app)?$/i.exec(c))) {
    const name = unquote(m[1]!);
    return withPackage(name, (pkg) => single({ name: 'launch_app', arguments: { packageName: pkg } }, `Opening ${pkg} failed`, () => `Opened ${pkg}.`));
  }
  if ((m = /^(?:close|stop|terminate|kill|force[- ]stop)(?: the)? (.+?)(?: app)?$/i.exec(c))) {
    const name = unquote(m[1]!);
    return withPackage(name, (pkg) => single({ name: 'terminate_app', arguments: { packageName: pkg } }, `Stopping ${pkg} failed`, () => `Stopped ${pkg}.`));
  }
  if (/^(?:list|show)(?: the)?(?: installed)? apps$|^what apps are installed\??$/i.test(c)) {
    return single({ name: 'list_apps', arguments: {} }, 'Listing the apps failed', (r) => `Installed apps: ${((r as { apps?: string[] }).apps ?? []).join(', ')}.`);
  }
  if (/^(?:take a |take )?screen ?shot$/i.test(c)) {
    return single({ name: 'screenshot', arguments: {} }, 'Taking a screenshot failed', () => 'Here is the screen.');
  }
  if (/^(?:what(?:'s| is) on(?: the)? screen\??|list(?: the)? elements|describe(?: the)? screen)$/i.test(c)) {
    return single({ name: 'list_elements', arguments: {} }, 'Reading the screen failed', (r) => {
      const names = [...new Set(elementsOf(r).map((e) => e.text || e.contentDescription).filter(Boolean))];
      return names.length > 0 ? `On screen: ${names.join(', ')}.` : 'Nothing readable is on the screen.';
    });
  }
  if (/^(?:what(?:'s| is) the )?screen size\??$/i.test(c)) {
    return single({ name: 'screen_size', arguments: {} }, 'Reading the screen size failed', (r) => {
      const { width, height } = r as { width?: number; height?: number };
      return `The screen is ${width}x${height} pixels.`;
    });
  }
  return undefined;
}

export function offlineProvider(): Provider {
  return {
    async turn({ history, tools, onDelta }): Promise<Turn> {
      const start = history.findLastIndex((item) => item.role === 'user');
      const request = (history[start] as Extract<HistoryItem, { role: 'user' }>).text;
      const results = history.slice(start + 1).filter((item) => item.role === 'tool');
      const said: string[] = [];
      const finish = (): Turn => {
        const text = said.join(' ');
        onDelta(text);
        return { text, toolCalls: [] };
      };
      const parts = request.split(SPLIT).filter((p) => p.trim() !== '');
      const commands = parts.map((p) => ({ text: p.trim(), command: parse(p) }));
      if (tools.length === 0 && commands.some((c) => c.command && !HELP_REQUEST.test(c.text))) {
        said.push('This chat is not bound to a device, so there is nothing to drive. Create a chat with metadata.deviceId set to the serial of a device of the session.');
        return finish();
      }
      let next = 0;
      let acted = false;
      for (const { text, command } of commands) {
        if (!command) {
          said.push(`I can't do "${text}" without a model. ${HELP}`);
          continue;
        }
        const mine: unknown[] = [];
        for (;;) {
          const step = command(mine);
          if ('say' in step) {
            said.push(step.say);
            break;
          }
          const done = results[next];
          if (!done) return { text: '', toolCalls: [{ id: `offline_${next}`, ...step.call }] };
          next++;
          if (done.error !== undefined) {
            // Later commands were meant for the screen this one would have left: stop here.
            said.push(`${step.failing}: ${done.error}`);
            return finish();
          }
          acted ||= ACTIONS.has(step.call.name);
          mine.push(done.result);
        }
      }
      if (acted) {
        const shot = results[next];
        if (!shot) return { text: '', toolCalls: [{ id: `offline_${next}`, name: 'screenshot', arguments: {} }] };
        if (shot.error !== undefined) said.push(`Taking a screenshot failed: ${shot.error}`);
      }
      return finish();
    },
  };
}
