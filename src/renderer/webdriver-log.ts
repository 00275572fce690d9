/**
 * A WebDriver run's commands.log, as the lab writes it (one command a line: `<time> <what> <status> <ms> ms [<error>]`,
 * then a blank line and how it ended), read back into the commands the result's page lists beside the video.
 */

export interface LoggedCommand {
  at: number;
  /** The command in words: `POST /element (xpath //...)`, `POST /execute/sync (mobile: swipe)`, `session ended (...)`. */
  what: string;
  status: number;
  ms: number;
  error?: string;
}

const LINE = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z) (.+?) (\d{3}) (\d+) ms(?: (.+))?$/;

export function parseCommandsLog(text: string): LoggedCommand[] {
  const commands: LoggedCommand[] = [];
  for (const line of text.split('\n')) {
    const m = LINE.exec(line);
    if (!m) continue;
    commands.push({ at: Date.parse(m[1]!), what: m[2]!, status: Number(m[3]), ms: Number(m[4]), ...(m[5] ? { error: m[5] } : {}) });
  }
  return commands;
}

/** Where a command is in the run's video, in seconds: from the video's first picture, never before it. */
export const videoOffset = (at: number, videoStartedAt: number): number => Math.max(0, (at - videoStartedAt) / 1000);

/** `m:ss.s`: a place in a video of minutes. */
export function fmtOffset(seconds: number): string {
  const m = Math.floor(seconds / 60);
  const s = seconds - m * 60;
  return `${m}:${s.toFixed(1).padStart(4, '0')}`;
}
