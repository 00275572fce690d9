import type { ToolImage } from '../tools.js';
import { parseArguments, parseJson, postForEvents, withPath } from './http.js';
import type { HistoryItem, ModelToolCall, Provider, Turn, TurnInput } from './types.js';

/** The parts of a chat.completion.chunk this reads. */
interface Chunk {
  choices: {
    delta?: {
      content?: string | null;
      tool_calls?: { index?: number; id?: string; function?: { name?: string; arguments?: string } }[];
    };
  }[];
}

export const OPENAI_DEFAULT_ENDPOINT = 'https://api.openai.com/v1';

/** The chat-completions wire format: what OpenAI, Ollama, LM Studio, the llama.cpp server and vLLM all accept. */
function messagesOf(system: string, history: readonly HistoryItem[]): unknown[] {
  const out: unknown[] = [{ role: 'system', content: system }];
  const images: ToolImage[] = [];
  const flushImages = () => {
    // A tool message carries text only, so an image the model asked for follows as a user message.
    if (images.length === 0) return;
    out.push({
      role: 'user',
      content: images.splice(0).map((image) => ({ type: 'image_url', image_url: { url: `data:${image.mimeType};base64,${image.data.toString('base64')}` } })),
    });
  };
  for (const item of history) {
    if (item.role !== 'tool') flushImages();
    if (item.role === 'user') out.push({ role: 'user', content: item.text });
    else if (item.role === 'assistant') {
      out.push({
        role: 'assistant',
        content: item.text || null,
        ...(item.toolCalls.length > 0
          ? { tool_calls: item.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.arguments) } })) }
          : {}),
      });
    } else {
      out.push({ role: 'tool', tool_call_id: item.toolCallId, content: item.content });
      if (item.image) images.push(item.image);
    }
  }
  flushImages();
  return out;
}

export function openAiProvider(endpoint: string, model: string, apiKey: string | undefined): Provider {
  const url = withPath(endpoint, '/chat/completions');
  return {
    async turn({ system, history, tools, onDelta, signal }: TurnInput): Promise<Turn> {
      let text = '';
      // Tool calls stream in pieces keyed by index: the first piece has the id and name, later ones more arguments.
      const calls: { id: string; name: string; args: string }[] = [];
      await postForEvents(
        url,
        apiKey ? { authorization: `Bearer ${apiKey}` } : {},
        {
          model,
          stream: true,
          messages: messagesOf(system, history),
          ...(tools.length > 0
            ? { tools: tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } })) }
            : {}),
        },
        signal,
        (event) => {
          if (event.data === '[DONE]') return;
          const chunk = parseJson<Chunk>(event.data);
          const delta = chunk?.choices?.[0]?.delta;
          if (!delta) return;
          if (typeof delta.content === 'string' && delta.content !== '') {
            text += delta.content;
            onDelta(delta.content);
          }
          for (const piece of delta.tool_calls ?? []) {
            const index = typeof piece.index === 'number' ? piece.index : calls.length;
            const call = (calls[index] ??= { id: '', name: '', args: '' });
            if (piece.id) call.id = piece.id;
            if (piece.function?.name) call.name += piece.function.name;
            if (piece.function?.arguments) call.args += piece.function.arguments;
          }
        },
      );
      const toolCalls: ModelToolCall[] = calls
        .filter((c) => c.name !== '')
        .map((c, i) => ({ id: c.id || `call_${i}`, name: c.name, arguments: parseArguments(c.args) }));
      return { text, toolCalls };
    },
  };
}
