import { randomUUID } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import { Readable } from 'node:stream';
import type { Chat, CreateChatBody, Message, ToolCall } from '../../../shared/api/chats.js';
import { ExecutionError, runAgent } from '../assistant/agent.js';
import { ProviderError, type HistoryItem, type Provider } from '../assistant/providers/types.js';
import type { DeviceAccess } from '../assistant/tools.js';
import { conflict, notFound } from '../domain/errors.js';
import { EventLog, type ExecutionEvent, type Subscriber } from '../events/event-log.js';
import type { ChatRow, MessageRow, RunStatus, ToolCallRow } from '../store/chats.js';
import type { BlobStore } from '../blobs/blob-store.js';
import type { Stores } from '../store/index.js';
import type { AssistantSettings } from './assistant-settings.js';
import { requireRole } from './auth.js';
import type { DeviceControl } from './device-control.js';
import type { Clock, Scope } from './scope.js';
import type { Sessions } from './sessions.js';

/** How chats, messages and tool calls look in the API, for the events and answers that carry them. */
export interface ChatPresenter {
  chat(chat: ChatRow): Chat;
  message(chat: ChatRow, message: MessageRow, toolCalls: ToolCallRow[]): Message;
  toolCall(toolCall: ToolCallRow): ToolCall;
  /** Where the GUI fetches a screenshot a tool call took. */
  toolCallImageUrl(chat: ChatRow, messageId: string, toolCallId: string): string;
}

/** How much of a chat's earlier conversation goes to the model with a new message. */
const HISTORY_MESSAGES = 40;

const RESTARTED = {
  code: 'engine_restarted',
  message: 'Benchtop restarted while this message was executing, so it did not finish. Send it again.',
};
const STOPPED = {
  code: 'engine_stopped',
  message: 'Benchtop was shut down while this message was executing, so it did not finish. Send it again.',
};
const SHUTDOWN = Symbol('shutdown');

/** The terminal event of an execution that ended with `status`. */
function terminalEvent(executionId: string, message: Message): [kind: 'execution.completed' | 'execution.failed', data: unknown] {
  return message.status === 'failed'
    ? ['execution.failed', { executionId, error: message.error ?? { code: 'failed', message: 'The execution failed.' } }]
    : ['execution.completed', { executionId, status: message.status }];
}

/** A finished execution as the spec replays it: its stored final state, the text as one delta, no tool_call events. */
function finalStateEvents(message: Message): ExecutionEvent[] {
  const executionId = message.execution!.id;
  const events: [string, unknown][] = [
    ['execution.started', { executionId, messageId: message.id }],
    ['assistant.message.started', { messageId: message.id }],
    ['assistant.message.delta', { messageId: message.id, text: message.text }],
    ['assistant.message.completed', { message }],
    terminalEvent(executionId, message),
  ];
  return events.map(([kind, data], i) => ({ seq: i + 1, kind, data: JSON.stringify(data) }));
}

// ---- the runtime: executions in flight ----

interface Running {
  controller: AbortController;
  done: Promise<void>;
}

/** The assistant's executions in this engine, and their event log. */
export class Chats {
  readonly events: EventLog;
  private readonly running = new Map<string, Running>();
  private stopped = false;

  constructor(
    private readonly stores: Pick<Stores, 'chats'>,
    private readonly sessions: Pick<Sessions, 'getSession'>,
    private readonly control: Pick<DeviceControl, 'holding' | 'screenshot' | 'elements' | 'act'>,
    private readonly assistant: Pick<AssistantSettings, 'provider'>,
    private readonly blobs: Pick<BlobStore, 'stage' | 'open'>,
    /** Events and answers carry messages and tool calls in the API's shapes. */
    private readonly present: ChatPresenter,
    private readonly now: Clock,
    private readonly options: { toolTimeoutMs: number; log: (message: string) => void },
  ) {
    this.events = new EventLog(stores.chats, now);
  }

  /** At start nothing executes yet, so whatever was running when the engine last stopped has failed. */
  recover(): number {
    return this.stores.chats.failRunning(RESTARTED, this.now());
  }

  /** Starts the assistant on a new running message; resolves when it has ended, however it ended. */
  start(scope: Scope, chat: ChatRow, message: MessageRow, history: HistoryItem[], provider: Provider): Promise<void> {
    const executionId = message.executionId!;
    const controller = new AbortController();
    // A message posted while the engine shuts down ends at once, so that no stream holds the shutdown open.
    if (this.stopped) controller.abort(SHUTDOWN);
    this.events.open(executionId);
    this.events.append(executionId, 'execution.started', { executionId, messageId: message.id });
    this.events.append(executionId, 'assistant.message.started', { messageId: message.id });
    const done = this.execute(scope, chat, message, history, provider, controller.signal)
      // Nobody may be waiting (async mode): a failure to record the end is logged, never an unhandled rejection.
      .catch((e) => this.options.log(`assistant execution ${executionId} could not be recorded: ${(e as Error).stack ?? e}`))
      .finally(() => this.running.delete(message.id));
    this.running.set(message.id, { controller, done });
    return done;
  }

  /** Stops a running execution, its model request or tool call included, and waits until it has ended. */
  async cancel(messageId: string): Promise<void> {
    const running = this.running.get(messageId);
    if (!running) return;
    running.controller.abort();
    await running.done;
  }

  /** Ends every execution (as failed: the engine is stopping) before the database closes. */
  async stop(): Promise<void> {
    this.stopped = true;
    const all = [...this.running.values()];
    for (const r of all) r.controller.abort(SHUTDOWN);
    await Promise.all(all.map((r) => r.done));
  }

  /**
   * The whole stream of a new execution, for the response to its post: live, or, if it has already ended (a quick
   * answer can end before the response attaches), its stored events exactly as they were sent.
   */
  follow(message: MessageRow, subscriber: Subscriber): () => void {
    const detach = this.events.attach(message.executionId!, subscriber);
    if (detach) return detach;
    for (const event of this.stores.chats.eventsAfter(message.executionId!, 0)) subscriber.event(event);
    subscriber.end();
    return () => undefined;
  }

  /** Replays a running execution from after `afterSeq` and follows it live; a finished one replays its final state. */
  watch(chat: ChatRow, message: MessageRow, subscriber: Subscriber, afterSeq = 0): () => void {
    const detach = this.events.attach(message.executionId!, subscriber, afterSeq);
    if (detach) return detach;
    const fresh = this.stores.chats.message(message.id, chat.id)!;
    for (const event of finalStateEvents(this.presentMessage(chat, fresh))) subscriber.event(event);
    subscriber.end();
    return () => undefined;
  }

  private device(scope: Scope, chat: ChatRow, messageId: string): DeviceAccess | undefined {
    const serial = chat.metadata.deviceId;
    if (!serial) return undefined;
    const { control, blobs, present } = this;
    // Authorized on every call, for the caller who posted the message: a released device or a lost role stops it.
    const target = { sessionId: chat.sessionId, serial };
    let phone: DeviceAccess['phone'];
    try {
      const row = control.holding(scope, target);
      phone = { platform: row.platform, name: row.name, osVersion: row.osVersion };
    } catch {
      // Not in use now: the first tool call says so, in the driver's words.
    }
    return {
      phone,
      async screenshot() {
        const frame = await control.screenshot(scope, target);
        return { data: frame.data, mimeType: `image/${frame.format}` as const };
      },
      elements: () => control.elements(scope, target),
      act: (action, signal) => control.act(scope, target, action, signal),
      async saveImage(image, toolCallId) {
        const staged = await blobs.stage(Readable.from([image.data]));
        await staged.commit();
        const url = present.toolCallImageUrl(chat, messageId, toolCallId);
        return { url, contentType: image.mimeType, sha256: staged.sha256 };
      },
    };
  }

  private async execute(scope: Scope, chat: ChatRow, message: MessageRow, history: HistoryItem[], provider: Provider, signal: AbortSignal): Promise<void> {
    const store = this.stores.chats;
    const executionId = message.executionId!;
    const emit = (kind: Parameters<EventLog['append']>[1], data: unknown) => this.events.append(executionId, kind, data);
    let text = '';
    let status: Exclude<RunStatus, 'running'> = 'completed';
    let error: { code: string; message: string } | undefined;
    try {
      await runAgent({
        provider,
        history,
        device: this.device(scope, chat, message.id),
        signal,
        toolTimeoutMs: this.options.toolTimeoutMs,
        onDelta: (delta) => {
          // A chunk already in flight when the execution was stopped belongs to no message any more.
          if (delta === '' || signal.aborted) return;
          text += delta;
          emit('assistant.message.delta', { messageId: message.id, text: delta });
        },
        onToolCall: (name, args) => {
          // What the model said before asking for a tool is kept, so that a restart loses as little as possible.
          store.setText(message.id, text);
          const row = store.addToolCall(randomUUID(), message.id, name, args, this.now());
          emit('tool_call.created', { toolCall: this.present.toolCall(row) });
          return {
            id: row.id,
            end: (end) => {
              const done = end.status === 'completed'
                ? store.finishToolCall(row.id, 'completed', end.result, undefined, this.now())
                : store.finishToolCall(row.id, end.status, undefined, end.error, this.now());
              emit('tool_call.completed', { toolCall: this.present.toolCall(done) });
            },
          };
        },
      });
    } catch (e) {
      if (signal.aborted) {
        if (signal.reason === SHUTDOWN) [status, error] = ['failed', STOPPED];
        else status = 'cancelled';
      } else if (e instanceof ExecutionError || e instanceof ProviderError) {
        [status, error] = ['failed', { code: e.code, message: e.message }];
      } else {
        this.options.log(`assistant execution ${executionId} failed: ${(e as Error).stack ?? e}`);
        [status, error] = ['failed', { code: 'assistant_error', message: `The assistant failed unexpectedly: ${(e as Error).message}` }];
      }
    }
    store.finishMessage(message.id, status, text, error, this.now());
    const final = this.presentMessage(chat, store.message(message.id, chat.id)!);
    emit('assistant.message.completed', { message: final });
    emit(...terminalEvent(executionId, final));
    this.events.close(executionId);
  }

  // ---- the API's operations ----

  private presentMessage(chat: ChatRow, m: MessageRow): Message {
    return this.present.message(chat, m, m.role === 'assistant' ? this.stores.chats.toolCalls(m.id) : []);
  }

  createChat(scope: Scope, sessionId: string, body: CreateChatBody): Chat {
    requireRole(scope.role, 'readwrite');
    const session = this.sessions.getSession(scope, sessionId);
    const deviceId = body.metadata?.deviceId;
    if (deviceId !== undefined && !session.devices.some((d) => d.serial === deviceId && d.releasedAt === null)) {
      throw notFound('device');
    }
    const row = this.stores.chats.createChat(
      { id: randomUUID(), organizationId: scope.organization.id, sessionId, title: body.title ?? null, metadata: body.metadata ?? {} },
      this.now(),
    );
    return this.present.chat(row);
  }

  listChats(scope: Scope, sessionId: string): Chat[] {
    this.sessions.getSession(scope, sessionId);
    return this.stores.chats.chats(sessionId).map((c) => this.present.chat(c));
  }

  /** A chat of the session, which is in the caller's organization; a chat of another session is not found. */
  private chatOf(scope: Scope, sessionId: string, chatId: string): ChatRow {
    this.sessions.getSession(scope, sessionId);
    const chat = this.stores.chats.chat(chatId, sessionId);
    if (!chat) throw notFound('chat');
    return chat;
  }

  getChat(scope: Scope, sessionId: string, chatId: string): Chat {
    return this.present.chat(this.chatOf(scope, sessionId, chatId));
  }

  /** The most recent page, oldest first; nextCursor is the oldest item's createdAt, for the page before it. */
  listMessages(
    scope: Scope,
    sessionId: string,
    chatId: string,
    query: { limit: number; before?: number },
  ): { messages: Message[]; nextCursor?: number } {
    const chat = this.chatOf(scope, sessionId, chatId);
    const rows = this.stores.chats.messagePage(chatId, query.before ?? Number.MAX_SAFE_INTEGER, query.limit + 1);
    const more = rows.length > query.limit;
    const page = (more ? rows.slice(0, query.limit) : rows).reverse();
    return { messages: page.map((m) => this.presentMessage(chat, m)), nextCursor: more ? page[0]!.createdAt : undefined };
  }

  private findMessage(scope: Scope, sessionId: string, chatId: string, messageId: string) {
    const chat = this.chatOf(scope, sessionId, chatId);
    const message = this.stores.chats.message(messageId, chatId);
    if (!message) throw notFound('message');
    return { chat, message };
  }

  getMessage(scope: Scope, sessionId: string, chatId: string, messageId: string): Message {
    const { chat, message } = this.findMessage(scope, sessionId, chatId, messageId);
    return this.presentMessage(chat, message);
  }

  listToolCalls(scope: Scope, sessionId: string, chatId: string, messageId: string): ToolCall[] {
    const { message } = this.findMessage(scope, sessionId, chatId, messageId);
    return this.stores.chats.toolCalls(message.id).map((t) => this.present.toolCall(t));
  }

  /** The file of a screenshot a tool call took, and its type. */
  /** The image and an open handle on its content, opened before anything is sent so that a lost blob is still a 404. */
  async openToolCallImage(scope: Scope, sessionId: string, chatId: string, messageId: string, toolCallId: string): Promise<{ content: FileHandle; contentType: string }> {
    const { message } = this.findMessage(scope, sessionId, chatId, messageId);
    const call = this.stores.chats.toolCall(toolCallId);
    const image = (call?.result as { image?: { sha256?: string; contentType?: string } } | null)?.image;
    if (!call || call.messageId !== message.id || !image?.sha256) throw notFound('image');
    try {
      return { content: await this.blobs.open(image.sha256), contentType: image.contentType ?? 'image/png' };
    } catch (error) {
      // The row outlived its content (a data dir restored without its blobs): gone for the caller, not a fault of ours.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      throw notFound('image');
    }
  }

  /** A message as it is now, in the API's shape: the answer to a post once the execution has started or ended. */
  currentMessage(chat: ChatRow, messageId: string): Message {
    return this.presentMessage(chat, this.stores.chats.message(messageId, chat.id)!);
  }

  /** The assistant message whose events a client follows; a user message has no execution. */
  executionOf(scope: Scope, sessionId: string, chatId: string, messageId: string) {
    const found = this.findMessage(scope, sessionId, chatId, messageId);
    if (!found.message.executionId) throw notFound('execution');
    return found;
  }

  /** The chat's conversation so far, as the model is given it: texts only, the newest last. */
  private historyOf(chatId: string, before: number): HistoryItem[] {
    const rows = this.stores.chats.messagePage(chatId, before, HISTORY_MESSAGES).reverse();
    const items: HistoryItem[] = [];
    for (const m of rows) {
      if (m.role === 'user') items.push({ role: 'user', text: m.text });
      // Providers want a conversation that opens with the user.
      else if (m.text !== '' && items.length > 0) items.push({ role: 'assistant', text: m.text, toolCalls: [] });
    }
    return items;
  }

  /** Stores the user message and, unless execute is false, starts the assistant on a new running message. */
  async postMessage(scope: Scope, sessionId: string, chatId: string, text: string, execute: boolean): Promise<Posted> {
    requireRole(scope.role, 'readwrite');
    const chat = this.chatOf(scope, sessionId, chatId);
    const store = this.stores.chats;
    if (!execute) {
      const [user] = store.addMessages(chatId, this.now(), [{ id: randomUUID(), role: 'user', status: 'completed', text, executionId: null }]);
      return { kind: 'stored', message: this.presentMessage(chat, user!) };
    }
    const provider = await this.assistant.provider();
    // Checked after the await: two posts that raced must not both start.
    if (store.runningIn(chatId)) {
      throw conflict('execution_running', 'The assistant is still answering the previous message in this chat. Wait for it, or cancel it.');
    }
    const now = this.now();
    const history = this.historyOf(chatId, Number.MAX_SAFE_INTEGER);
    const [, assistant] = store.addMessages(chatId, now, [
      { id: randomUUID(), role: 'user', status: 'completed', text, executionId: null },
      { id: randomUUID(), role: 'assistant', status: 'running', text: '', executionId: randomUUID() },
    ]);
    history.push({ role: 'user', text });
    const done = this.start(scope, chat, assistant!, history, provider);
    return { kind: 'started', chat, message: assistant!, done };
  }

  async cancelMessage(scope: Scope, sessionId: string, chatId: string, messageId: string): Promise<Message> {
    requireRole(scope.role, 'readwrite');
    const { chat, message } = this.findMessage(scope, sessionId, chatId, messageId);
    await this.cancel(message.id);
    return this.presentMessage(chat, this.stores.chats.message(message.id, chat.id)!);
  }
}

export type Posted =
  | { kind: 'stored'; message: Message }
  | { kind: 'started'; chat: ChatRow; message: MessageRow; done: Promise<void> };
