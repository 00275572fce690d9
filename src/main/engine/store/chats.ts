import { uniqueCreatedAt } from '../domain/time.js';
import type { Db } from './db.js';

export type RunStatus = 'running' | 'completed' | 'failed' | 'cancelled';

export interface ChatRow {
  id: string;
  organizationId: string;
  sessionId: string;
  title: string | null;
  metadata: { deviceId?: string } & Record<string, unknown>;
  createdAt: number;
}

export interface MessageRow {
  id: string;
  chatId: string;
  role: 'user' | 'assistant';
  status: RunStatus;
  text: string;
  executionId: string | null;
  errorCode: string | null;
  errorMessage: string | null;
  createdAt: number;
  completedAt: number | null;
}

export type NewMessage = Pick<MessageRow, 'id' | 'role' | 'status' | 'text' | 'executionId'>;

export interface ToolCallRow {
  id: string;
  messageId: string;
  name: string;
  arguments: Record<string, unknown>;
  status: RunStatus;
  result: unknown;
  errorCode: string | null;
  errorMessage: string | null;
  createdAt: number;
  completedAt: number | null;
}

export interface StoredEvent {
  seq: number;
  kind: string;
  /** The JSON text exactly as it was sent. */
  data: string;
}

const CHAT_COLUMNS = 'id, organization_id AS organizationId, session_id AS sessionId, title, metadata, created_at AS createdAt';
const MESSAGE_COLUMNS =
  'id, chat_id AS chatId, role, status, text, execution_id AS executionId, error_code AS errorCode, ' +
  'error_message AS errorMessage, created_at AS createdAt, completed_at AS completedAt';
const TOOL_CALL_COLUMNS =
  'id, message_id AS messageId, name, arguments, status, result, error_code AS errorCode, error_message AS errorMessage, ' +
  'created_at AS createdAt, completed_at AS completedAt';

type Raw<T, K extends keyof T> = Omit<T, K> & Record<K, string | null>;

const chatOf = (r: Raw<ChatRow, 'metadata'>): ChatRow => ({ ...r, metadata: JSON.parse(r.metadata!) });
const toolCallOf = (r: Raw<ToolCallRow, 'arguments' | 'result'>): ToolCallRow => ({
  ...r,
  arguments: JSON.parse(r.arguments!),
  result: r.result === null ? null : JSON.parse(r.result),
});

export function chatStore(db: Db) {
  const insertChat = db.prepare('INSERT INTO chats (id, organization_id, session_id, title, metadata, created_at) VALUES (?, ?, ?, ?, ?, ?)');
  const newestChat = db.prepare<[string], { createdAt: number }>('SELECT max(created_at) AS createdAt FROM chats WHERE session_id = ?');
  const chatById = db.prepare<[string, string], Raw<ChatRow, 'metadata'>>(`SELECT ${CHAT_COLUMNS} FROM chats WHERE id = ? AND session_id = ?`);
  const chatsOf = db.prepare<[string], Raw<ChatRow, 'metadata'>>(`SELECT ${CHAT_COLUMNS} FROM chats WHERE session_id = ? ORDER BY created_at`);

  const insertMessage = db.prepare(
    'INSERT INTO chat_messages (id, chat_id, role, status, text, execution_id, created_at, completed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const newestMessage = db.prepare<[string], { createdAt: number | null }>('SELECT max(created_at) AS createdAt FROM chat_messages WHERE chat_id = ?');
  const messageById = db.prepare<[string, string], MessageRow>(`SELECT ${MESSAGE_COLUMNS} FROM chat_messages WHERE id = ? AND chat_id = ?`);
  const messagePage = db.prepare<[string, number, number], MessageRow>(
    `SELECT ${MESSAGE_COLUMNS} FROM chat_messages WHERE chat_id = ? AND created_at < ? ORDER BY created_at DESC LIMIT ?`,
  );
  const runningInChat = db.prepare<[string], MessageRow>(`SELECT ${MESSAGE_COLUMNS} FROM chat_messages WHERE chat_id = ? AND status = 'running'`);
  const setText = db.prepare('UPDATE chat_messages SET text = ? WHERE id = ?');
  const finishMessage = db.prepare(
    "UPDATE chat_messages SET status = ?, text = ?, error_code = ?, error_message = ?, completed_at = ? WHERE id = ? AND status = 'running'",
  );
  const failRunningMessages = db.prepare(
    "UPDATE chat_messages SET status = 'failed', error_code = ?, error_message = ?, completed_at = ? WHERE status = 'running'",
  );

  const insertToolCall = db.prepare(
    "INSERT INTO chat_tool_calls (id, message_id, name, arguments, status, created_at) VALUES (?, ?, ?, ?, 'running', ?)",
  );
  const finishToolCall = db.prepare(
    'UPDATE chat_tool_calls SET status = ?, result = ?, error_code = ?, error_message = ?, completed_at = ? WHERE id = ?',
  );
  const toolCallById = db.prepare<[string], Raw<ToolCallRow, 'arguments' | 'result'>>(`SELECT ${TOOL_CALL_COLUMNS} FROM chat_tool_calls WHERE id = ?`);
  const toolCallsOf = db.prepare<[string], Raw<ToolCallRow, 'arguments' | 'result'>>(
    `SELECT ${TOOL_CALL_COLUMNS} FROM chat_tool_calls WHERE message_id = ? ORDER BY created_at, rowid`,
  );
  const failRunningToolCalls = db.prepare(
    "UPDATE chat_tool_calls SET status = 'failed', error_code = ?, error_message = ?, completed_at = ? WHERE status = 'running'",
  );

  const insertEvent = db.prepare('INSERT INTO execution_events (execution_id, seq, kind, data, created_at) VALUES (?, ?, ?, ?, ?)');
  const lazySync = db.prepare('PRAGMA synchronous = NORMAL');
  const fullSync = db.prepare('PRAGMA synchronous = FULL');
  const eventsAfter = db.prepare<[string, number], StoredEvent>(
    'SELECT seq, kind, data FROM execution_events WHERE execution_id = ? AND seq > ? ORDER BY seq',
  );

  const addMessages = db.transaction((chatId: string, now: number, messages: NewMessage[]): MessageRow[] => {
    let newest = newestMessage.get(chatId)?.createdAt;
    return messages.map((m) => {
      const createdAt = uniqueCreatedAt(now, newest);
      newest = createdAt;
      // A message stored as already ended (a user message) ended when it was created.
      const completedAt = m.status === 'running' ? null : createdAt;
      insertMessage.run(m.id, chatId, m.role, m.status, m.text, m.executionId, createdAt, completedAt);
      return { ...m, chatId, createdAt, completedAt, errorCode: null, errorMessage: null };
    });
  });

  return {
    createChat(row: Omit<ChatRow, 'createdAt'>, now: number): ChatRow {
      return db.transaction(() => {
        const createdAt = uniqueCreatedAt(now, newestChat.get(row.sessionId)?.createdAt);
        insertChat.run(row.id, row.organizationId, row.sessionId, row.title, JSON.stringify(row.metadata), createdAt);
        return { ...row, createdAt };
      }).immediate();
    },
    /** The chat if it belongs to the session. */
    chat: (id: string, sessionId: string): ChatRow | undefined => {
      const r = chatById.get(id, sessionId);
      return r && chatOf(r);
    },
    /** Oldest first. */
    chats: (sessionId: string): ChatRow[] => chatsOf.all(sessionId).map(chatOf),

    /** Inserts the messages in order, each createdAt unique and later than the chat's newest. */
    addMessages: (chatId: string, now: number, messages: NewMessage[]): MessageRow[] => addMessages.immediate(chatId, now, messages),
    message: (id: string, chatId: string) => messageById.get(id, chatId),
    /** Newest first, created strictly before `before`. */
    messagePage: (chatId: string, before: number, limit: number) => messagePage.all(chatId, before, limit),
    runningIn: (chatId: string) => runningInChat.get(chatId),
    setText: (id: string, text: string) => void setText.run(text, id),
    /** Ends a running message; false if it had already ended. */
    finishMessage: (id: string, status: Exclude<RunStatus, 'running'>, text: string, error: { code: string; message: string } | undefined, now: number) =>
      finishMessage.run(status, text, error?.code ?? null, error?.message ?? null, now, id).changes === 1,
    /** After a restart nothing is executing: whatever was running has failed. */
    failRunning(error: { code: string; message: string }, now: number): number {
      return db.transaction(() => {
        failRunningToolCalls.run(error.code, error.message, now);
        return failRunningMessages.run(error.code, error.message, now).changes;
      }).immediate();
    },

    addToolCall(id: string, messageId: string, name: string, args: Record<string, unknown>, now: number): ToolCallRow {
      insertToolCall.run(id, messageId, name, JSON.stringify(args), now);
      return { id, messageId, name, arguments: args, status: 'running', result: null, errorCode: null, errorMessage: null, createdAt: now, completedAt: null };
    },
    finishToolCall(id: string, status: Exclude<RunStatus, 'running'>, result: unknown, error: { code: string; message: string } | undefined, now: number): ToolCallRow {
      finishToolCall.run(status, result === undefined ? null : JSON.stringify(result), error?.code ?? null, error?.message ?? null, now, id);
      return toolCallOf(toolCallById.get(id)!);
    },
    toolCall: (id: string): ToolCallRow | undefined => {
      const r = toolCallById.get(id);
      return r && toolCallOf(r);
    },
    toolCalls: (messageId: string): ToolCallRow[] => toolCallsOf.all(messageId).map(toolCallOf),

    /**
     * An event's commit reaches the WAL file before it returns, so an engine that crashes keeps every event it sent;
     * it does not wait for the disk to flush (a delta every few milliseconds would each wait for one). Only a power
     * cut can lose the newest events, and the message's own row, written with a flush, then says how it ended.
     */
    appendEvent(executionId: string, seq: number, kind: string, data: string, now: number): void {
      lazySync.run();
      try {
        insertEvent.run(executionId, seq, kind, data, now);
      } finally {
        fullSync.run();
      }
    },
    eventsAfter: (executionId: string, seq: number) => eventsAfter.all(executionId, seq),
  };
}
