import { Type, type Static } from 'typebox';
import { DateTime, Nullable, Uuid } from './common.js';

export const ChatMetadata = Type.Object(
  {
    deviceId: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'The serial (info.serial) of a device allocated to the session: the assistant drives it.' })),
  },
  { description: 'Free-form; deviceId binds the chat to a device of its session.' },
);

export const Chat = Type.Object({
  id: Uuid,
  sessionId: Uuid,
  title: Type.Optional(Type.String()),
  metadata: ChatMetadata,
  createdAt: DateTime,
});
export type Chat = Static<typeof Chat>;

export const CreateChatBody = Type.Object(
  {
    title: Type.Optional(Type.String({ maxLength: 200 })),
    metadata: Type.Optional(ChatMetadata),
  },
  { additionalProperties: false },
);
export type CreateChatBody = Static<typeof CreateChatBody>;

export const MessageStatus = Type.Union([Type.Literal('running'), Type.Literal('completed'), Type.Literal('failed'), Type.Literal('cancelled')], {
  description: 'running while its execution runs; then completed, failed or cancelled.',
});

export const ErrorDetail = Type.Object({ code: Type.String(), message: Type.String() });

export const ToolCall = Type.Object({
  id: Uuid,
  messageId: Uuid,
  name: Type.String(),
  arguments: Type.Record(Type.String(), Type.Unknown()),
  status: MessageStatus,
  result: Type.Unknown({ description: 'What the tool returned; a screenshot\'s is {image: {url, contentType, sha256}}: GET the url (with the same bearer, or ?token=) for the PNG.' }),
  error: Type.Optional(ErrorDetail),
  createdAt: DateTime,
  completedAt: Nullable(DateTime),
});
export type ToolCall = Static<typeof ToolCall>;

export const Message = Type.Object({
  id: Uuid,
  chatId: Uuid,
  role: Type.Union([Type.Literal('user'), Type.Literal('assistant')]),
  status: MessageStatus,
  text: Type.String(),
  toolCalls: Type.Array(ToolCall),
  execution: Nullable(Type.Object({ id: Uuid, status: MessageStatus, eventsUrl: Type.String() })),
  error: Type.Optional(ErrorDetail),
  createdAt: DateTime,
  completedAt: Nullable(DateTime),
});
export type Message = Static<typeof Message>;

/** A completed screenshot tool call's result: GET image.url with the bearer, or ?token= from an <img>. */
export const ScreenshotResult = Type.Object({
  image: Type.Object({ url: Type.String(), contentType: Type.Literal('image/png'), sha256: Type.String() }),
});
export type ScreenshotResult = Static<typeof ScreenshotResult>;

/** The data of each Server-Sent Event of an execution, by its kind (the event: line), in the order they come. */
export const ExecutionEventData = {
  'execution.started': Type.Object({ executionId: Uuid, messageId: Uuid }),
  'assistant.message.started': Type.Object({ messageId: Uuid }),
  'assistant.message.delta': Type.Object({ messageId: Uuid, text: Type.String() }),
  'tool_call.created': Type.Object({ toolCall: ToolCall }),
  'tool_call.completed': Type.Object({ toolCall: ToolCall }),
  'assistant.message.completed': Type.Object({ message: Message }),
  'execution.completed': Type.Object({ executionId: Uuid, status: Type.Union([Type.Literal('completed'), Type.Literal('cancelled')]) }),
  'execution.failed': Type.Object({ executionId: Uuid, error: ErrorDetail }),
};
export type ExecutionEventKind = keyof typeof ExecutionEventData;
export type ExecutionEvent = {
  [K in ExecutionEventKind]: { kind: K; data: Static<(typeof ExecutionEventData)[K]> };
}[ExecutionEventKind];

const Options = {
  mode: Type.Optional(Type.Union([Type.Literal('async'), Type.Literal('sync')], { description: 'async (default): 202 at once; sync: 201 once the assistant has finished.' })),
  stream: Type.Optional(Type.Boolean({ description: 'true: 200 text/event-stream of the execution\'s events.' })),
  execute: Type.Optional(Type.Boolean({ description: 'false: store the user message only; 201.' })),
};

export const PostMessageBody = Type.Object(
  { text: Type.String({ minLength: 1, maxLength: 20_000 }), ...Options },
  { additionalProperties: false },
);
export type PostMessageBody = Static<typeof PostMessageBody>;

export const PostMessageQuery = Type.Object(Options);

export const MessageListQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100 })),
  before: Type.Optional(DateTime),
});

export const AssistantProvider = Type.Union([Type.Literal('offline'), Type.Literal('openai'), Type.Literal('anthropic')], {
  description: 'offline: the built-in command interpreter (no model); openai: any OpenAI-compatible chat-completions endpoint (Ollama, LM Studio, llama.cpp server, vLLM, OpenAI); anthropic: the Messages API.',
});

export const AssistantConfig = Type.Object({
  provider: AssistantProvider,
  endpoint: Nullable(Type.String()),
  model: Nullable(Type.String()),
  hasApiKey: Type.Boolean(),
});
export type AssistantConfig = Static<typeof AssistantConfig>;

const Endpoint = Type.String({ maxLength: 2000, pattern: '^https?://[^\\s]+$', description: 'Base URL, e.g. http://127.0.0.1:11434/v1 or https://api.anthropic.com' });

export const AssistantConfigPatch = Type.Object(
  {
    provider: Type.Optional(AssistantProvider),
    endpoint: Type.Optional(Nullable(Endpoint)),
    model: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 200 }))),
    apiKey: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 4000, description: 'Kept in the OS keychain (a 0600 file headless); never returned. null removes it.' }))),
  },
  { additionalProperties: false },
);
export type AssistantConfigPatch = Static<typeof AssistantConfigPatch>;

export type AssistantProvider = Static<typeof AssistantProvider>;

export const AssistantConfigBody = Type.Object(
  {
    provider: AssistantProvider,
    endpoint: Type.Optional(Nullable(Endpoint)),
    model: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 200 }))),
    apiKey: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 4000 }))),
  },
  { additionalProperties: false },
);
export type AssistantConfigBody = Static<typeof AssistantConfigBody>;
