import type { Chat, Message, ToolCall } from '../../../../shared/api/chats.js';
import { iso, isoOrNull } from '../../domain/time.js';
import type { ChatPresenter } from '../../services/chats.js';
import type { ChatRow, MessageRow, ToolCallRow } from '../../store/chats.js';
import { API_PREFIX } from '../prefix.js';

/** Chats, messages and tool calls as the API shows them; the execution events carry the same shapes. */

const base = (chat: Pick<ChatRow, 'id' | 'sessionId'>) => `${API_PREFIX}/sessions/${chat.sessionId}/chats/${chat.id}`;

export const presentChat = (c: ChatRow): Chat => ({
  id: c.id,
  sessionId: c.sessionId,
  ...(c.title !== null ? { title: c.title } : {}),
  metadata: c.metadata,
  createdAt: iso(c.createdAt),
});

export const presentToolCall = (t: ToolCallRow): ToolCall => ({
  id: t.id,
  messageId: t.messageId,
  name: t.name,
  arguments: t.arguments,
  status: t.status,
  result: t.result,
  ...(t.errorCode ? { error: { code: t.errorCode, message: t.errorMessage ?? '' } } : {}),
  createdAt: iso(t.createdAt),
  completedAt: isoOrNull(t.completedAt),
});

export const presentMessage = (chat: ChatRow, m: MessageRow, toolCalls: ToolCallRow[]): Message => ({
  id: m.id,
  chatId: m.chatId,
  role: m.role,
  status: m.status,
  text: m.text,
  toolCalls: toolCalls.map(presentToolCall),
  execution: m.executionId ? { id: m.executionId, status: m.status, eventsUrl: `${base(chat)}/messages/${m.id}/events` } : null,
  ...(m.errorCode ? { error: { code: m.errorCode, message: m.errorMessage ?? '' } } : {}),
  createdAt: iso(m.createdAt),
  completedAt: isoOrNull(m.completedAt),
});

/** What the chats service builds its events and answers with. */
export const chatPresenter: ChatPresenter = {
  chat: presentChat,
  message: presentMessage,
  toolCall: presentToolCall,
  toolCallImageUrl: (chat, messageId, toolCallId) => `${base(chat)}/messages/${messageId}/tool-calls/${toolCallId}/image`,
};
