import { useEffect, useRef, useState, type FormEvent } from 'react';
import type { Chat, Message, ScreenshotResult, ToolCall } from '../../shared/api/chats.js';
import type { Device } from '../../shared/api/sessions.js';
import { followExecution } from '../../shared/client/execution-events.js';
import { api } from '../app-context.js';
import { Empty, ErrorBanner, Spinner, Status, useAction, useLoad } from '../ui.js';

function ToolCallItem({ call }: { call: ToolCall }) {
  const shot = call.name === 'screenshot' && call.status === 'completed' ? (call.result as ScreenshotResult).image : undefined;
  const args = Object.keys(call.arguments).length > 0 ? JSON.stringify(call.arguments) : undefined;
  return (
    <li className="tool-call" aria-label={`Tool call ${call.name} ${call.status}`}>
      <div className="tool-call-head">
        <code>{call.name}</code> <Status value={call.status} />
        {args && <code className="muted args">{args}</code>}
      </div>
      {call.error && <p className="error">{call.error.message}</p>}
      {shot && <img className="tool-shot" src={api.browserUrl(shot.url)} alt={`Screenshot from ${call.name}`} />}
    </li>
  );
}

function MessageItem({ message, onCancel }: { message: Message; onCancel?(): void }) {
  return (
    <li className={`message ${message.role}`} aria-label={`${message.role} message`}>
      <div className="message-role">
        {message.role === 'user' ? 'You' : 'Assistant'} {message.role === 'assistant' && message.status !== 'completed' && <Status value={message.status} />}
        {onCancel && <button type="button" className="link" aria-label="Stop the assistant" onClick={onCancel}>Stop</button>}
      </div>
      {message.text && <div className="message-text">{message.text}</div>}
      {message.role === 'assistant' && message.status === 'running' && !message.text && message.toolCalls.length === 0 && <Spinner label="The assistant is thinking" />}
      {message.toolCalls.length > 0 && <ol className="timeline" aria-label="Tool calls">{message.toolCalls.map((c) => <ToolCallItem key={c.id} call={c} />)}</ol>}
      {message.error && <p className="error">{message.error.message}</p>}
    </li>
  );
}

const upsert = (calls: ToolCall[], call: ToolCall) =>
  calls.some((c) => c.id === call.id) ? calls.map((c) => (c.id === call.id ? call : c)) : [...calls, call];

export interface ChatViewProps {
  sessionId: string;
  chatId: string;
  /** The message box's accessible name. */
  inputLabel?: string;
  /** Why nothing can be sent now (the phone was released, say), as a sentence; the box is then disabled. */
  blocked?: string;
  /**
   * Whether the chat is in sight: it is then read again now and every few seconds, so that messages sent from another
   * pane (the phone page's Assistant tab, a teammate, an MCP client) show without a reload.
   */
  active?: boolean;
}

/** How often a chat in sight is read again for messages sent elsewhere. */
const CHAT_POLL_MS = 4000;

export function ChatView({ sessionId, chatId, inputLabel = 'Message to the assistant', blocked, active = false }: ChatViewProps) {
  const [messages, setMessages] = useState<Message[]>([]);
  const [error, setError] = useState<string>();
  const [text, setText] = useState('');
  const following = useRef(new Map<string, AbortController>());
  const list = useRef<HTMLOListElement>(null);

  const patch = (id: string, change: (m: Message) => Message) => setMessages((ms) => ms.map((m) => (m.id === id ? change(m) : m)));

  /** A running message's text comes only from its stream, never also from what is stored, or it would show twice. */
  const follow = (message: Message) => {
    if (!message.execution || following.current.has(message.id)) return;
    const abort = new AbortController();
    following.current.set(message.id, abort);
    patch(message.id, (m) => ({ ...m, text: '', toolCalls: [] }));
    void followExecution(api, message.execution.eventsUrl, (event) => {
      switch (event.kind) {
        case 'assistant.message.delta': return patch(message.id, (m) => ({ ...m, text: m.text + event.data.text }));
        case 'tool_call.created':
        case 'tool_call.completed': return patch(message.id, (m) => ({ ...m, toolCalls: upsert(m.toolCalls, event.data.toolCall) }));
        // A finished execution's replay has no tool_call events: the final message carries its tool calls.
        case 'assistant.message.completed': return patch(message.id, () => event.data.message);
        case 'execution.completed': return patch(message.id, (m) => ({ ...m, status: event.data.status }));
        case 'execution.failed': return patch(message.id, (m) => ({ ...m, status: 'failed', error: event.data.error }));
        default: return undefined;
      }
    }, abort.signal).catch((e: Error) => setError(e.message)).finally(() => following.current.delete(message.id));
  };

  const load = async () => {
    try {
      const page = await api.messages(sessionId, chatId, { limit: 100 });
      // A message being followed keeps what its stream has shown (the stored copy lags it); an unchanged list is kept
      // as it is, so that a poll neither draws it again nor scrolls the reader to the end.
      setMessages((old) => {
        const next = page.data.map((m) => (following.current.has(m.id) ? old.find((o) => o.id === m.id) ?? m : m));
        return JSON.stringify(next) === JSON.stringify(old) ? old : next;
      });
      page.data.filter((m) => m.role === 'assistant' && m.status === 'running').forEach(follow);
    } catch (e) {
      setError((e as Error).message);
    }
  };

  useEffect(() => {
    void load();
    const streams = following.current;
    return () => streams.forEach((a) => a.abort());
  }, [sessionId, chatId]);

  useEffect(() => {
    if (!active) return;
    void load();
    const timer = setInterval(() => void load(), CHAT_POLL_MS);
    return () => clearInterval(timer);
  }, [active, sessionId, chatId]);

  useEffect(() => {
    list.current?.lastElementChild?.scrollIntoView({ block: 'end' });
  }, [messages]);

  /** The stream ends the message as cancelled; the answer is only needed for its error. */
  const cancel = (messageId: string) => void api.cancelMessage(sessionId, chatId, messageId).catch((e: Error) => setError(e.message));

  const send = async (event: FormEvent) => {
    event.preventDefault();
    const body = text.trim();
    if (!body) return;
    setText('');
    try {
      const assistant = await api.postMessage(sessionId, chatId, body);
      const page = await api.messages(sessionId, chatId, { limit: 100 });
      setMessages(page.data.map((m) => (m.id === assistant.id ? { ...m, text: '', toolCalls: [] } : m)));
      follow(page.data.find((m) => m.id === assistant.id) ?? assistant);
      setError(undefined);
    } catch (e) {
      setError((e as Error).message);
      setText(body);
    }
  };

  return (
    <div className="chat">
      {messages.length === 0 ? <Empty>Ask the assistant to do something on the phone, e.g. “tap Settings”.</Empty> : (
        <ol ref={list} className="messages" aria-label="Messages" aria-live="polite" tabIndex={0}>{messages.map((m) => (
          <MessageItem key={m.id} message={m} onCancel={m.role === 'assistant' && m.status === 'running' ? () => cancel(m.id) : undefined} />
        ))}</ol>
      )}
      <ErrorBanner error={error} onDismiss={() => setError(undefined)} />
      {blocked && <p className="muted" role="status">{blocked}</p>}
      <form className="composer" onSubmit={(e) => void send(e)}>
        {/* The words shown above the box are its whole accessible name: what a reader sees is what a speech user says. */}
        <label className="grow composer-field">
          <span className="composer-label">{inputLabel}</span>
          <input value={text} disabled={Boolean(blocked)} onChange={(e) => setText(e.target.value)} placeholder="e.g. open Settings and turn on dark mode" />
        </label>
        <button type="submit" className="primary" disabled={!text.trim() || Boolean(blocked)}>Send</button>
      </form>
    </div>
  );
}

/** Why a chat bound to a phone cannot drive it now, as a sentence; undefined while the phone is in use. */
export function blockedReason(serial: string | undefined, devices: Device[]): string | undefined {
  if (!serial) return undefined;
  const device = devices.find((d) => d.info.serial === serial && d.status !== 'released') ?? devices.find((d) => d.info.serial === serial);
  if (!device) return undefined;
  switch (device.status) {
    case 'in_use': return undefined;
    case 'offline': return `${device.info.name} is unplugged: the assistant can drive it again once it is back.`;
    case 'released': return `${device.info.name} was released, so the assistant can no longer drive it. Start a new chat with a phone in use.`;
    default: return `${device.info.name} is not ready yet (${device.status.replace(/_/g, ' ')}).`;
  }
}

/** When a chat began, on the 24-hour clock the Calendar uses. */
const startedAt = (iso: string) => {
  const d = new Date(iso);
  return `${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}`;
};

export function ChatsPanel({ sessionId, active }: { sessionId: string; active: boolean }) {
  // Read again each time the tab is shown: a chat started from a phone's Assistant tab is then listed.
  const chats = useLoad(() => api.chats(sessionId), [sessionId, active]);
  const devices = useLoad(() => api.devices(sessionId), [sessionId, active]);
  const [chatId, setChatId] = useState<string>();
  const [deviceId, setDeviceId] = useState('');
  const create = useAction();
  const inUse = (devices.data?.data ?? []).filter((d) => d.status === 'in_use' && d.info.serial);
  const all = chats.data?.data ?? [];
  const selected = chatId ?? all.at(-1)?.id;
  // A chat about a phone goes by the phone's name, as everywhere else in the GUI; its time tells two of them apart.
  const phoneName = (serial: string | undefined) => serial && devices.data?.data.find((d) => d.info.serial === serial)?.info.name;
  const titleOf = (c: Chat) => c.title ?? (phoneName(c.metadata.deviceId) || `Chat ${c.id.slice(0, 8)}`);

  const start = async (event: FormEvent) => {
    event.preventDefault();
    const chat = await create.run(() => api.createChat(sessionId, deviceId || inUse[0]?.info.serial));
    if (chat) {
      await chats.reload();
      setChatId(chat.id);
    }
  };

  return (
    <div className="panel chats">
      <aside className="chat-list">
        <form onSubmit={(e) => void start(e)} className="stack">
          <label>
            Phone
            <select aria-label="Phone for the new chat" value={deviceId || (inUse[0]?.info.serial ?? '')} onChange={(e) => setDeviceId(e.target.value)}>
              {inUse.length === 0 && <option value="">No phone in use</option>}
              {inUse.map((d) => <option key={d.id} value={d.info.serial}>{d.info.name} ({d.info.serial})</option>)}
            </select>
          </label>
          <button type="submit" className="primary" disabled={create.pending || inUse.length === 0}>New chat</button>
        </form>
        <ErrorBanner error={create.error ?? chats.error} />
        <ul aria-label="Chats">
          {all.map((c) => (
            <li key={c.id}>
              <button type="button" aria-current={c.id === selected} onClick={() => setChatId(c.id)}>
                {titleOf(c)}<span className="muted"> · {startedAt(c.createdAt)}</span>
              </button>
            </li>
          ))}
        </ul>
      </aside>
      {selected ? <ChatView key={selected} sessionId={sessionId} chatId={selected} active={active} blocked={blockedReason(all.find((c) => c.id === selected)?.metadata.deviceId, devices.data?.data ?? [])} /> : <Empty>{inUse.length === 0 ? 'Allocate a phone under Devices, then start a chat: the assistant drives that phone.' : 'Start a chat bound to a phone of this session.'}</Empty>}
    </div>
  );
}
