import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** What the scripted model answers to one request. */
export interface ScriptedReply {
  /** Text chunks, streamed in order. */
  text?: string[];
  /** Tool calls, streamed after the text, each one's arguments in two pieces as real endpoints do. */
  toolCalls?: { name: string; arguments: Record<string, unknown> }[];
  /** Pause before each chunk. */
  chunkDelayMs?: number;
  /** Pause after the headers, before the first chunk (a slow model). */
  stallMs?: number;
  /** Answer this HTTP status with a JSON error body instead of a stream. */
  status?: number;
}

export interface ModelRequest {
  body: any;
  headers: IncomingMessage['headers'];
  url: string;
  /** Whether the client went away before the answer was complete. */
  aborted: boolean;
}

export interface ScriptedModel {
  /** The endpoint to configure: http://127.0.0.1:<port>/v1 */
  endpoint: string;
  requests: ModelRequest[];
  /** performance.now() when each request arrived, and when its first text chunk was written. */
  timings: { receivedAt: number; firstChunkAt?: number }[];
  stop(): Promise<void>;
}

export type Script = (body: any, index: number) => ScriptedReply;

const frame = (data: unknown, event?: string) => `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;

/** The chunks of an OpenAI chat-completions stream. */
function openAiChunks(reply: ScriptedReply): string[] {
  const chunk = (delta: unknown, finish: string | null = null) =>
    frame({ id: 'chatcmpl-scripted', object: 'chat.completion.chunk', model: 'scripted', choices: [{ index: 0, delta, finish_reason: finish }] });
  const out = [chunk({ role: 'assistant', content: '' })];
  for (const text of reply.text ?? []) out.push(chunk({ content: text }));
  (reply.toolCalls ?? []).forEach((call, index) => {
    const args = JSON.stringify(call.arguments);
    const half = Math.floor(args.length / 2);
    out.push(chunk({ tool_calls: [{ index, id: `call_${index}_${call.name}`, type: 'function', function: { name: call.name, arguments: args.slice(0, half) } }] }));
    out.push(chunk({ tool_calls: [{ index, function: { arguments: args.slice(half) } }] }));
  });
  out.push(chunk({}, reply.toolCalls?.length ? 'tool_calls' : 'stop'));
  out.push(frame('[DONE]'));
  return out;
}

/** The events of an Anthropic Messages stream. */
function anthropicChunks(reply: ScriptedReply): string[] {
  const e = (type: string, rest: Record<string, unknown>) => frame({ type, ...rest }, type);
  const out = [e('message_start', { message: { id: 'msg_scripted', type: 'message', role: 'assistant', content: [], model: 'scripted', usage: { input_tokens: 1, output_tokens: 0 } } })];
  let index = 0;
  if (reply.text?.length) {
    out.push(e('content_block_start', { index, content_block: { type: 'text', text: '' } }));
    for (const text of reply.text) out.push(e('content_block_delta', { index, delta: { type: 'text_delta', text } }));
    out.push(e('content_block_stop', { index }));
    index++;
  }
  for (const call of reply.toolCalls ?? []) {
    const args = JSON.stringify(call.arguments);
    const half = Math.floor(args.length / 2);
    out.push(e('content_block_start', { index, content_block: { type: 'tool_use', id: `toolu_${index}`, name: call.name, input: {} } }));
    out.push(e('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: args.slice(0, half) } }));
    out.push(e('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: args.slice(half) } }));
    out.push(e('content_block_stop', { index }));
    index++;
  }
  out.push(e('message_delta', { delta: { stop_reason: reply.toolCalls?.length ? 'tool_use' : 'end_turn' }, usage: { output_tokens: 1 } }));
  out.push(e('message_stop', {}));
  return out;
}

/**
 * A model endpoint on loopback that streams what the script says, in the OpenAI chat-completions format
 * (POST /v1/chat/completions) or the Anthropic Messages format (POST /v1/messages).
 */
export async function startScriptedModel(format: 'openai' | 'anthropic', script: Script): Promise<ScriptedModel> {
  const requests: ModelRequest[] = [];
  const timings: ScriptedModel['timings'] = [];
  const path = format === 'openai' ? '/v1/chat/completions' : '/v1/messages';
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const receivedAt = performance.now();
    let raw = '';
    for await (const chunk of req) raw += chunk;
    if (req.method !== 'POST' || req.url !== path) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
      return;
    }
    const record: ModelRequest = { body: JSON.parse(raw), headers: req.headers, url: req.url, aborted: false };
    const timing: ScriptedModel['timings'][number] = { receivedAt };
    requests.push(record);
    timings.push(timing);
    res.on('close', () => {
      if (!res.writableFinished) record.aborted = true;
    });
    const reply = script(record.body, requests.length - 1);
    if (reply.status) {
      res.writeHead(reply.status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'scripted failure' } }));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.flushHeaders();
    if (reply.stallMs) await sleep(reply.stallMs);
    const chunks = format === 'openai' ? openAiChunks(reply) : anthropicChunks(reply);
    for (const [i, chunk] of chunks.entries()) {
      if (record.aborted) return;
      if (reply.chunkDelayMs && i > 0) await sleep(reply.chunkDelayMs);
      if (timing.firstChunkAt === undefined && /"content":"[^"]|text_delta/.test(chunk)) timing.firstChunkAt = performance.now();
      res.write(chunk);
    }
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}/v1`,
    requests,
    timings,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** An SSE event as a client reads it. */
export interface ClientEvent {
  id: number;
  event: string;
  data: any;
}

/** Reads an event stream until it ends (or `until` says stop); comments are counted, not returned. */
export async function readEvents(
  res: Response,
  until?: (event: ClientEvent, all: ClientEvent[]) => boolean,
): Promise<{ events: ClientEvent[]; comments: string[] }> {
  const events: ClientEvent[] = [];
  const comments: string[] = [];
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let cut: number;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const fields: Record<string, string> = {};
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) comments.push(line.slice(1).trim());
        else {
          const colon = line.indexOf(': ');
          fields[line.slice(0, colon)] = line.slice(colon + 2);
        }
      }
      if (fields.event === undefined) continue;
      const event = { id: Number(fields.id), event: fields.event, data: JSON.parse(fields.data!) };
      events.push(event);
      if (until?.(event, events)) {
        await reader.cancel();
        return { events, comments };
      }
    }
  }
  return { events, comments };
}
