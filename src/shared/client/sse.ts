import { createParser, type EventSourceMessage } from 'eventsource-parser';

/**
 * Reads a response's Server-Sent Events until the stream ends or its request is aborted. fetch with a ReadableStream
 * rather than EventSource: the bearer goes in the Authorization header, not in a URL, and a finished stream is not
 * reconnected to. `afterChunk` runs once per chunk received, after its events: one state update per chunk, not per
 * event, for busy streams.
 */
export async function readEvents(
  body: ReadableStream,
  onEvent: (message: EventSourceMessage) => void,
  afterChunk?: () => void,
): Promise<void> {
  const parser = createParser({ onEvent });
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      parser.feed(value);
      afterChunk?.();
    }
  } catch (error) {
    if ((error as Error).name !== 'AbortError') throw error;
  }
}
