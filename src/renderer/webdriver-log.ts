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

/**
 * A command's words as the page shows them: an element's id in its path (Appium's, a UUID of no meaning to a person,
 * whom the locator in brackets tells which element it was) cut to its first 8 characters. The whole line stays in
 * commands.log, and in the row's title.
 */
export function shortIds(what: string): string {
  // Only in the path: a locator in brackets (an xpath) may hold `/element/...` of its own.
  const at = what.indexOf(' (');
  const path = at < 0 ? what : what.slice(0, at);
  return path.replace(/\/element\/([^/ ]{8})[^/ ]{5,}\//g, '/element/$1…/') + (at < 0 ? '' : what.slice(at));
}

/** Where a command is in the run's video, in seconds: from the video's first picture, never before it. */
export const videoOffset = (at: number, videoStartedAt: number): number => Math.max(0, (at - videoStartedAt) / 1000);

/** `m:ss.s`: a place in a video of minutes. */
export function fmtOffset(seconds: number): string {
  const m = Math.floor(seconds / 60);
  const s = seconds - m * 60;
  return `${m}:${s.toFixed(1).padStart(4, '0')}`;
}

/** How near a command must be to the video's time to be the one it shows: a picture's worth, and the clock's slack. */
const SAME_MOMENT_S = 0.05;
/** How far from a clicked command's moment the video may be and still show that command: a seek's landing, not play. */
const SEEK_SLACK_S = 0.25;

/**
 * The command the video is at: the last one at or before its time. Commands a few milliseconds apart (a find and its
 * click, or all those before the video's first picture) share one moment of the video; of those, the one a person
 * clicked is the one shown, not the last of them.
 */
export function currentCommand(offsets: readonly number[], time: number, picked?: number): number {
  const last = offsets.reduce((found, offset, i) => (offset <= time + SAME_MOMENT_S ? i : found), -1);
  if (picked === undefined || offsets[picked] === undefined) return last;
  // The clicked command stays the one shown where the seek landed: a video seeks to a picture's time, which can be a
  // frame before or after the moment asked for, next to a command logged a few tens of milliseconds later.
  return Math.abs(time - offsets[picked]!) <= SEEK_SLACK_S ? picked : last;
}

/**
 * Why a run's page shows no video, in words: its files removed by the lab's retention, none asked for, or one asked
 * for only if the run did not pass (and it passed). `removedOn` is the removal's time as the page prints it.
 */
export function noVideoReason(stats: { video?: unknown; videoChosenBy?: unknown }, removedOn: string | undefined): string {
  if (removedOn !== undefined) return `The lab removed this run's files on ${removedOn}: it keeps test results' files for as long as its settings say.`;
  if (stats.video === 'low-disk') return "The lab's disk was nearly full when the run began: it recorded no video (BENCHTOP_VIDEO_MIN_FREE_MB).";
  const byLab = stats.videoChosenBy === 'lab';
  if (stats.video === 'off') return byLab ? 'The lab records no video of a run that does not ask for one (its settings).' : 'The run asked for no video (benchtop:options.video false).';
  if (stats.video === 'discarded') {
    return byLab
      ? 'The run passed: the lab keeps the video only of a run that does not pass, unless the run asks (its settings).'
      : 'The run passed, and asked for its video only if it did not (benchtop:options.video "retain-on-failure").';
  }
  return 'The run kept no video.';
}
