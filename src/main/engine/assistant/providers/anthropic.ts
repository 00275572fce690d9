import { parseArguments, parseJson, postForEvents, withPath } from './http.js';
import { ProviderError, type HistoryItem, type Provider, type Turn, type TurnInput } from './types.js';

/** The parts of a Messages stream event this reads. */
interface StreamEvent {
  type: string;
  index: number;
  content_block?: { type: string; id?: string; name?: string };
  delta?: { type?: string; text?: string; partial_json?: string };
  error?: { message?: string };
}

export const ANTHROPIC_DEFAULT_ENDPOINT = 'https://api.anthropic.com';
const API_VERSION = '2023-06-01';
const MAX_TOKENS = 4096;

/** The Messages API format: tool results go back as a user turn, images inside them. */
function messagesOf(history: readonly HistoryItem[]): unknown[] {
  const out: { role: 'user' | 'assistant'; content: unknown[] }[] = [];
  const push = (role: 'user' | 'assistant', block: unknown) => {
    const last = out[out.length - 1];
    // Consecutive blocks of one role belong in one message: the API requires the roles to alternate.
    if (last?.role === role) last.content.push(block);
    else out.push({ role, content: [block] });
  };
  for (const item of history) {
    if (item.role === 'user') push('user', { type: 'text', text: item.text });
    else if (item.role === 'assistant') {
      if (item.text) push('assistant', { type: 'text', text: item.text });
      for (const c of item.toolCalls) push('assistant', { type: 'tool_use', id: c.id, name: c.name, input: c.arguments });
    } else {
      const content: unknown[] = [{ type: 'text', text: item.content }];
      if (item.image) content.push({ type: 'image', source: { type: 'base64', media_type: item.image.mimeType, data: item.image.data.toString('base64') } });
      push('user', { type: 'tool_result', tool_use_id: item.toolCallId, content });
    }
  }
  return out;
}

export function anthropicProvider(endpoint: string, model: string, apiKey: string | undefined): Provider {
  const url = withPath(withPath(endpoint.replace(/\/v1\/messages\/*$/, ''), '/v1'), '/messages');
  return {
    async turn({ system, history, tools, onDelta, signal }: TurnInput): Promise<Turn> {
      let text = '';
      const blocks: { id: string; name: string; json: string }[] = [];
      await postForEvents(
        url,
        { 'anthropic-version': API_VERSION, ...(apiKey ? { 'x-api-key': apiKey } : {}) },
        {
          model,
          max_tokens: MAX_TOKENS,
          stream: true,
          system,
          messages: messagesOf(history),
          ...(tools.length > 0 ? { tools: tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters })) } : {}),
        },
        signal,
        (event) => {
          const payload = parseJson<StreamEvent>(event.data);
          switch (payload?.type) {
            case 'content_block_start':
              if (payload.content_block?.type === 'tool_use' && payload.index !== undefined) {
                blocks[payload.index] = { id: payload.content_block.id ?? `tool_${payload.index}`, name: payload.content_block.name ?? '', json: '' };
              }
              break;
            case 'content_block_delta':
              if (payload.delta?.type === 'text_delta' && payload.delta.text) {
                text += payload.delta.text;
                onDelta(payload.delta.text);
              } else if (payload.delta?.type === 'input_json_delta' && payload.index !== undefined && blocks[payload.index]) {
                blocks[payload.index]!.json += payload.delta.partial_json ?? '';
              }
              break;
            case 'error':
              throw new ProviderError('model_error', `The model endpoint reported an error: ${payload.error?.message ?? event.data}`);
          }
        },
      );
      const toolCalls = blocks.filter(Boolean).map((b) => ({ id: b.id, name: b.name, arguments: parseArguments(b.json) }));
      return { text, toolCalls };
    },
  };
}
