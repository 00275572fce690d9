/**
 * Follows a phone's log (logcat on Android) from GET .../devices/{serial}/logs: Server-Sent Events, one `log` event
 * per line. fetch rather than EventSource, so that the bearer goes in the Authorization header, not in a URL.
 */
import { createParser } from 'eventsource-parser';
import type { ApiClient } from './api-client.js';

export interface LogLine {
  time: string;
  /** Android's letter (V, D, I, W, E, F); also accepted as a word (verbose, debug, ...). */
  level: string;
  tag: string;
  pid: number;
  message: string;
}

export const LOG_LEVELS = ['V', 'D', 'I', 'W', 'E', 'F'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** A line's level as one of Android's letters; an unknown level counts as I. */
export function levelOf(line: Pick<LogLine, 'level'>): LogLevel {
  const letter = String(line.level ?? '').trim().charAt(0).toUpperCase();
  if (letter === 'A') return 'F';
  return (LOG_LEVELS as readonly string[]).includes(letter) ? (letter as LogLevel) : 'I';
}

/** Whether a line passes the pane's filters: at least `minLevel`, and `text` in its tag or message (any case). */
export function logMatches(line: LogLine, minLevel: LogLevel, text: string): boolean {
  if (LOG_LEVELS.indexOf(levelOf(line)) < LOG_LEVELS.indexOf(minLevel)) return false;
  const needle = text.trim().toLowerCase();
  return !needle || line.tag.toLowerCase().includes(needle) || line.message.toLowerCase().includes(needle) || String(line.pid) === needle;
}

/** Calls onLines with each batch of lines as it arrives; resolves when the stream ends or the signal aborts it. */
export async function followDeviceLogs(
  api: ApiClient,
  sessionId: string,
  serial: string,
  onLines: (lines: LogLine[]) => void,
  signal?: AbortSignal,
): Promise<void> {
  const response = await api.deviceLogs(sessionId, serial, signal);
  if (!response.body) return;
  let batch: LogLine[] = [];
  const parser = createParser({
    onEvent(message) {
      if (message.event === 'log') batch.push(JSON.parse(message.data) as LogLine);
    },
  });
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      parser.feed(value);
      // One state update per chunk, not per line: a busy logcat sends hundreds of lines a second.
      if (batch.length > 0) {
        onLines(batch);
        batch = [];
      }
    }
  } catch (error) {
    if ((error as Error).name !== 'AbortError') throw error;
  }
}
