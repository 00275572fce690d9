import { describe, expect, it } from 'vitest';
import { currentCommand, fmtOffset, noVideoReason, parseCommandsLog, shortIds, videoOffset } from './webdriver-log.js';

describe('a WebDriver run\'s commands.log read back', () => {
  it('reads each command with its words, status, time and error; the trailer is not a command', () => {
    const log = [
      '2026-11-29T06:00:00.000Z POST /session (phone 5 ms, connect 12 ms, Appium 900 ms) 200 917 ms',
      '2026-11-29T06:00:01.250Z POST /element (xpath //android.widget.TextView[@text="Wi-Fi"]) 200 31 ms',
      '2026-11-29T06:00:02.000Z POST /execute/sync (return document.title + "xxxx…) 400 0 ms invalid argument',
      '2026-11-29T06:00:03.000Z session ended (deleted by the client) 200 0 ms',
      '',
      'Ended: deleted by the client.',
      'Reason given: it failed',
    ].join('\n');
    const commands = parseCommandsLog(log);
    expect(commands).toHaveLength(4);
    expect(commands[0]).toEqual({ at: Date.parse('2026-11-29T06:00:00.000Z'), what: 'POST /session (phone 5 ms, connect 12 ms, Appium 900 ms)', status: 200, ms: 917 });
    expect(commands[1]!.what).toBe('POST /element (xpath //android.widget.TextView[@text="Wi-Fi"])');
    expect(commands[2]).toMatchObject({ status: 400, error: 'invalid argument' });
    expect(commands[3]!.what).toBe('session ended (deleted by the client)');
  });

  it('places a command in the video from its first picture', () => {
    expect(videoOffset(Date.parse('2026-11-29T06:00:01.250Z'), Date.parse('2026-11-29T06:00:00.250Z'))).toBe(1);
    expect(videoOffset(0, 1000)).toBe(0);
    expect(fmtOffset(61.25)).toBe('1:01.3');
  });

  it('shows the command the video is at, and of commands a moment apart the one clicked', () => {
    // Two before the video's first picture, then a find and its click 17 ms apart, then one 2 s later.
    const offsets = [0, 0, 3.2, 3.217, 5.2];
    expect(currentCommand(offsets, 0)).toBe(1);
    expect(currentCommand(offsets, 4)).toBe(3);
    expect(currentCommand(offsets, 10)).toBe(4);
    expect(currentCommand([], 3)).toBe(-1);
    expect(currentCommand(offsets, -1)).toBe(-1);
    // Clicked: the find, not its click at the same moment; the first of the two before the video, not the second.
    expect(currentCommand(offsets, 3.2, 2)).toBe(2);
    expect(currentCommand(offsets, 0, 0)).toBe(0);
    // Once the video plays on past that moment, or is moved elsewhere, the command it is at.
    expect(currentCommand(offsets, 5.3, 2)).toBe(4);
    expect(currentCommand(offsets, 1, 2)).toBe(1);
    // A find and its click 80 ms apart on a busy machine: the seek to the find lands a frame late or early, and the
    // find stays the one shown; a quarter second on, the video has moved to the click.
    const busy = [0, 3.2, 3.28, 5.2];
    expect(currentCommand(busy, 3.29, 1)).toBe(1);
    expect(currentCommand(busy, 3.12, 1)).toBe(1);
    expect(currentCommand(busy, 3.5, 1)).toBe(2);
  });

  it('cuts an element\'s id in a command\'s path to 8 characters, and leaves short ids and other words alone', () => {
    expect(shortIds('POST /element/3a653ce8-53c7-4cfe-8db9-b5ba2ad49464/click (xpath //a[@text="Wi-Fi"])')).toBe('POST /element/3a653ce8…/click (xpath //a[@text="Wi-Fi"])');
    expect(shortIds('GET /element/e1/text')).toBe('GET /element/e1/text');
    expect(shortIds('POST /appium/element/00000000-0000-0000-0000-000000000001/value')).toBe('POST /appium/element/00000000…/value');
    expect(shortIds('POST /element (xpath //element/abcdefghijklmnop/x)')).toBe('POST /element (xpath //element/abcdefghijklmnop/x)');
  });
});

describe("why a run's page shows no video", () => {
  it('says which: its files removed, none asked for, one asked for only on failure (it passed), or none kept', () => {
    expect(noVideoReason({ video: 'discarded' }, '1/2/2027')).toMatch(/^The lab removed this run's files on 1\/2\/2027:/);
    expect(noVideoReason({ video: 'off' }, undefined)).toBe('The run asked for no video (benchtop:options.video false).');
    expect(noVideoReason({ video: 'discarded' }, undefined)).toBe('The run passed, and asked for its video only if it did not (benchtop:options.video "retain-on-failure").');
    expect(noVideoReason({}, undefined)).toBe('The run kept no video.');
    expect(noVideoReason({ video: 'low-disk' }, undefined)).toMatch(/^The lab's disk was nearly full when the run began/);
    // The lab's choice for a run that said nothing, in the lab's words.
    expect(noVideoReason({ video: 'off', videoChosenBy: 'lab' }, undefined)).toBe('The lab records no video of a run that does not ask for one (its settings).');
    expect(noVideoReason({ video: 'discarded', videoChosenBy: 'lab' }, undefined)).toMatch(/^The run passed: the lab keeps the video only of a run that does not pass/);
  });
});
