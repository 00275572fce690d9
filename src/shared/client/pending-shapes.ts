/**
 * Shapes of APIs being built on other branches at the same time (chats, files and apps, the extended lab
 * settings), written from their agreed contract. Once their TypeBox schemas land in src/shared/api/, these become
 * `Static<typeof X>` aliases of them.
 */

export type MessageStatus = 'running' | 'completed' | 'failed' | 'cancelled';

export interface Chat {
  id: string;
  sessionId: string;
  title?: string;
  metadata: { deviceId?: string };
  createdAt: string;
}

export interface ToolCall {
  id: string;
  messageId: string;
  name: string;
  arguments: unknown;
  status: string;
  /** A screenshot tool call's result carries the image: base64 PNG, or a URL. */
  result: unknown;
  error?: string;
  createdAt: string;
  completedAt: string | null;
}

export interface Message {
  id: string;
  chatId: string;
  role: 'user' | 'assistant';
  status: MessageStatus;
  text: string;
  toolCalls: ToolCall[];
  execution?: { id: string; status: string; eventsUrl: string };
  createdAt: string;
  completedAt: string | null;
}

/** The SSE events of one message execution, by kind. */
export type ExecutionEvent =
  | { kind: 'execution.started'; data: { executionId: string; messageId: string } }
  | { kind: 'assistant.message.started'; data: { messageId: string } }
  | { kind: 'assistant.message.delta'; data: { messageId: string; text: string } }
  | { kind: 'tool_call.created'; data: { toolCall: ToolCall } }
  | { kind: 'tool_call.completed'; data: { toolCall: ToolCall } }
  | { kind: 'assistant.message.completed'; data: { message: Message } }
  | { kind: 'execution.completed'; data: { executionId: string; status: string } }
  | { kind: 'execution.failed'; data: { executionId: string; error: unknown } };

export type FileStatus = 'pendingUpload' | 'processing' | 'ready' | 'failed';

export interface StoredFile {
  id: string;
  filename: string;
  size: number;
  sha256: string;
  status: FileStatus;
  failureReason?: string;
  platform?: string;
  bundleId?: string;
  metadata?: Record<string, unknown>;
  appId?: string;
  createdAt: string;
  expiresAt: string;
}

export interface CreatedFile {
  id: string;
  status: FileStatus;
  upload?: { method: 'PUT'; url: string; headers: Record<string, string> };
}

export interface App {
  id: string;
  platform: string;
  bundleId: string;
  name: string;
  latestVersion: string | null;
  files: Array<StoredFile | string>;
  createdAt: string;
  updatedAt: string;
}

/** GET /lab/settings: everything past signupOpen comes with the desktop branch, so older engines omit it. */
export interface LabSettings {
  signupOpen: boolean;
  lanSharing?: { enabled: boolean; port: number; urls: string[]; certificateSha256: string | null };
  secretStore?: 'keychain' | 'file';
  adb?: { enabled: boolean; host: string; port: number };
  quotas?: { devices: number; instances: number };
}

export interface LabSettingsPatch {
  signupOpen?: boolean;
  lanSharing?: boolean;
  adb?: { host: string; port: number };
  quotas?: { devices?: number; instances?: number };
}

export type AssistantProvider = 'offline' | 'openai' | 'anthropic';

export interface AssistantSettings {
  provider: AssistantProvider;
  endpoint: string;
  model: string;
  hasApiKey: boolean;
}
