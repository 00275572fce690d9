/**
 * Follows one message execution's Server-Sent Events. fetch with a ReadableStream rather than EventSource: the bearer
 * goes in the Authorization header, not in a ?token= URL, and a finished stream is not reconnected to (EventSource
 * would, and be sent the final state again).
 */
import { createParser } from 'eventsource-parser';
import { API_PREFIX, type ApiClient } from './api-client.js';
import type { ExecutionEvent } from '../api/chats.js';

/** Resolves when the stream ends (the execution finished) or the signal aborts it. */
export async function followExecution(
  api: ApiClient,
  eventsUrl: string,
  onEvent: (event: ExecutionEvent) => void,
  signal?: AbortSignal,
): Promise<void> {
  // eventsUrl is absolute or rooted at the origin; the client speaks paths under /api/v1.
  const path = new URL(eventsUrl, 'http://origin.invalid').pathname.replace(API_PREFIX, '');
  const response = await api.raw('GET', path, { signal });
  if (!response.body) return;
  const parser = createParser({
    onEvent(message) {
      if (!message.event) return;
      onEvent({ kind: message.event, data: JSON.parse(message.data) } as ExecutionEvent);
    },
  });
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      parser.feed(value);
    }
  } catch (error) {
    if ((error as Error).name !== 'AbortError') throw error;
  }
}
