import { runTool, ToolError, type DeviceAccess, type ToolOutcome, DEVICE_TOOLS } from './tools.js';
import type { HistoryItem, Provider } from './providers/types.js';

export const MAX_STEPS = 25;

/** Why an execution failed, in words a person can act on. */
export class ExecutionError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const SYSTEM = [
  'You are Benchtop\'s assistant. You drive one Android phone of a device lab through tools, on behalf of an engineer.',
  'Read the screen with list_elements first: it gives each element\'s text and its center in pixels. Take a screenshot only',
  'when the element list is not enough. Tap the center of an element. After an action, check the screen again before you',
  'claim it worked. Answer briefly and plainly; say so when something cannot be done.',
].join(' ');

const NO_DEVICE = ' This chat is not bound to a device, so you have no tools: say so if asked to act on a phone.';

/**
 * The instructions for the chat's phone. An iPhone's driver refuses Android's buttons, so the model is told which it
 * has and how apps are named, rather than learning it from failed tool calls.
 */
export function systemPrompt(phone: DeviceAccess['phone'] | undefined, bound = true): string {
  if (!bound) return SYSTEM + NO_DEVICE;
  if (phone?.platform !== 'ios') return SYSTEM;
  return SYSTEM.replace('one Android phone', `one iPhone (${phone.name}, iOS ${phone.osVersion})`) +
    ' An iPhone has no Back button: go back with the app\'s own back button at the top left, or press HOME. Its buttons are' +
    ' HOME, VOLUME_UP, VOLUME_DOWN, POWER (the side button: locks or wakes it), ENTER and BACKSPACE. Apps are named by' +
    ' bundle id: Settings is com.apple.Preferences, Safari com.apple.mobilesafari, Notes com.apple.mobilenotes.';
}

/** How a tool call ended, as stored on it. */
export type ToolEnd =
  | { status: 'completed'; result: unknown }
  | { status: 'failed' | 'cancelled'; error: { code: string; message: string } };

export interface AgentRun {
  provider: Provider;
  /** The earlier conversation and the new user message, last. */
  history: HistoryItem[];
  /** The chat's device; undefined when the chat is not bound to one. */
  device: DeviceAccess | undefined;
  signal: AbortSignal;
  toolTimeoutMs: number;
  maxSteps?: number;
  onDelta(text: string): void;
  /** A tool call starts: its stored id, and the function that records how it ended. */
  onToolCall(name: string, args: Record<string, unknown>): { id: string; end(end: ToolEnd): void };
}

/** Resolves with the promise, or rejects as soon as the signal aborts, leaving the work behind to settle unobserved. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * The agent loop: a model turn, then the tools it asked for, one at a time, until it answers without a tool call.
 * Throws ExecutionError on a limit or a model failure, and the signal's reason once it aborts.
 */
export async function runAgent(run: AgentRun): Promise<void> {
  const history = [...run.history];
  const tools = run.device ? DEVICE_TOOLS : [];
  const maxSteps = run.maxSteps ?? MAX_STEPS;
  for (let step = 0; step < maxSteps; step++) {
    const turn = await untilAborted(
      run.provider.turn({ system: systemPrompt(run.device?.phone, !!run.device), history, tools, onDelta: run.onDelta, signal: run.signal }),
      run.signal,
    );
    if (turn.toolCalls.length === 0) return;
    history.push({ role: 'assistant', text: turn.text, toolCalls: turn.toolCalls });
    for (const call of turn.toolCalls) {
      const { id, end } = run.onToolCall(call.name, call.arguments);
      const timeout = AbortSignal.timeout(run.toolTimeoutMs);
      let outcome: ToolOutcome;
      try {
        if (!run.device) throw new ToolError('no_device', 'This chat is not bound to a device.');
        const stop = AbortSignal.any([run.signal, timeout]);
        outcome = await untilAborted(runTool(run.device, call.name, call.arguments, id, stop), stop);
      } catch (error) {
        if (run.signal.aborted) {
          end({ status: 'cancelled', error: { code: 'cancelled', message: 'The execution was stopped during this tool call.' } });
          throw run.signal.reason;
        }
        const failure = timeout.aborted
          ? { code: 'tool_timeout', message: `${call.name} did not finish within ${run.toolTimeoutMs / 1000} s.` }
          : { code: error instanceof ToolError ? error.code : 'tool_failed', message: (error as Error).message };
        end({ status: 'failed', error: failure });
        history.push({ role: 'tool', toolCallId: call.id, name: call.name, content: `Error: ${failure.message}`, error: failure.message });
        continue;
      }
      end({ status: 'completed', result: outcome.result });
      history.push({ role: 'tool', toolCallId: call.id, name: call.name, content: outcome.forModel, result: outcome.result, image: outcome.image });
    }
  }
  throw new ExecutionError(
    'step_limit',
    `The assistant stopped after ${maxSteps} steps without finishing. Ask for a smaller task, or break it into several messages.`,
  );
}
