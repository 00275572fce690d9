/** Follows a phone's log (logcat on Android) from GET .../devices/{serial}/logs: one `log` event per line. */
import type { LogLine as ApiLogLine } from '../api/devices.js';
import type { ApiClient } from './api-client.js';
import { readEvents } from './sse.js';

/** The API's log line; its level is read as a word (verbose, debug, ...) or Android's letter (V, D, I, W, E, F). */
export type LogLine = Omit<ApiLogLine, 'level'> & { level: string };

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
  await readEvents(
    response.body,
    (message) => {
      if (message.event === 'log') batch.push(JSON.parse(message.data) as LogLine);
    },
    () => {
      if (batch.length === 0) return;
      onLines(batch);
      batch = [];
    },
  );
}
