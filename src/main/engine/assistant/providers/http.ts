import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { ProviderError } from './types.js';

/** How much of an error body goes into the failure text: enough to read, never a whole HTML page. */
const ERROR_BODY_CHARS = 300;

/**
 * POSTs JSON and hands each server-sent event of the streamed answer to onEvent. The signal aborts the request
 * whether it is waiting for headers or reading the stream.
 */
export async function postForEvents(
  url: string,
  headers: Record<string, string>,
  body: unknown,
  signal: AbortSignal,
  onEvent: (event: EventSourceMessage) => void,
): Promise<void> {
  // undici loads with the first model request: the offline interpreter, the default, never needs it.
  const { request } = await import('undici');
  let res;
  try {
    res = await request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
      body: JSON.stringify(body),
      signal,
    });
  } catch (error) {
    if (signal.aborted) throw error;
    throw new ProviderError('model_unreachable', `The model endpoint ${new URL(url).origin} could not be reached: ${(error as Error).message}.`);
  }
  if (res.statusCode < 200 || res.statusCode >= 300) {
    const text = (await res.body.text().catch(() => '')).slice(0, ERROR_BODY_CHARS).trim();
    throw new ProviderError('model_error', `The model endpoint answered ${res.statusCode}${text ? `: ${text}` : '.'}`);
  }
  let failure: Error | undefined;
  const parser = createParser({
    onEvent(event) {
      if (failure) return;
      try {
        onEvent(event);
      } catch (error) {
        failure = error as Error;
      }
    },
  });
  const decoder = new TextDecoder();
  for await (const chunk of res.body) {
    parser.feed(decoder.decode(chunk as Buffer, { stream: true }));
    if (failure) {
      res.body.destroy();
      throw failure;
    }
  }
}

/** A JSON payload of an event, or a clear failure when the endpoint sends something else. Fields may be missing. */
export function parseJson<T>(data: string): Partial<T> | undefined {
  try {
    return JSON.parse(data) as Partial<T> | undefined;
  } catch {
    throw new ProviderError('model_error', `The model endpoint streamed something that is not JSON: ${data.slice(0, 100)}`);
  }
}

/** Tool arguments arrive as JSON text; a model that writes broken JSON gets an empty object and the tool says why. */
export function parseArguments(text: string): Record<string, unknown> {
  if (text.trim() === '') return {};
  try {
    const value = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value) ? value : { _invalid: text };
  } catch {
    return { _invalid: text };
  }
}

/** The endpoint as given, or with the API path appended when only the base was given. */
export function withPath(endpoint: string, path: string): string {
  const trimmed = endpoint.replace(/\/+$/, '');
  return trimmed.endsWith(path) ? trimmed : trimmed + path;
}
