/** Follows one message execution's Server-Sent Events (EventSource would reconnect to a finished one and replay it). */
import { API_PREFIX, type ApiClient } from './api-client.js';
import type { ExecutionEvent } from '../api/chats.js';
import { readEvents } from './sse.js';

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
  await readEvents(response.body, (message) => {
    if (message.event) onEvent({ kind: message.event, data: JSON.parse(message.data) } as ExecutionEvent);
  });
}
