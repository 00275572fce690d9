import type { ToolImage, ToolSpec } from '../tools.js';

export interface ModelToolCall {
  /** The provider's own id for the call, echoed back with its result. */
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

/** The conversation as every provider is given it; each translates it into its own wire format. */
export type HistoryItem =
  | { role: 'user'; text: string }
  | { role: 'assistant'; text: string; toolCalls: ModelToolCall[] }
  | {
      role: 'tool';
      toolCallId: string;
      name: string;
      /** The result as text for a model. */
      content: string;
      /** The stored result, for the offline interpreter, which reads it rather than text; absent on failure. */
      result?: unknown;
      error?: string;
      image?: ToolImage;
    };

/** One model turn: text (streamed through onDelta as it arrives), then the tool calls it asks for. */
export interface Turn {
  text: string;
  toolCalls: ModelToolCall[];
}

export interface TurnInput {
  system: string;
  history: readonly HistoryItem[];
  tools: readonly ToolSpec[];
  onDelta(text: string): void;
  /** Aborts the HTTP request in flight. */
  signal: AbortSignal;
}

export interface Provider {
  turn(input: TurnInput): Promise<Turn>;
}

/** The model endpoint failed: the execution fails with this code and message. */
export class ProviderError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}
