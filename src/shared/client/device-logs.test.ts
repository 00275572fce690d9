import { describe, expect, it } from 'vitest';
import { levelOf, logMatches, type LogLine } from './device-logs.js';

const line = (level: string, tag: string, message: string, pid = 42): LogLine => ({ time: '2026-01-01T00:00:00.000Z', level, tag, pid, message });

describe('the logcat pane\'s filters', () => {
  it('reads a level as Android\'s letter, from a letter or a word', () => {
    expect(['V', 'd', 'info', 'Warn', 'ERROR', 'F', 'assert', '?'].map((level) => levelOf({ level }))).toEqual(['V', 'D', 'I', 'W', 'E', 'F', 'F', 'I']);
  });

  it('keeps lines at or above the level whose tag, message or pid holds the text', () => {
    expect(logMatches(line('W', 'ActivityManager', 'Start proc'), 'I', '')).toBe(true);
    expect(logMatches(line('D', 'ActivityManager', 'Start proc'), 'I', '')).toBe(false);
    expect(logMatches(line('E', 'ActivityManager', 'Start proc'), 'V', 'activitym')).toBe(true);
    expect(logMatches(line('E', 'Zygote', 'Start proc'), 'V', 'START')).toBe(true);
    expect(logMatches(line('E', 'Zygote', 'fork'), 'V', '42')).toBe(true);
    expect(logMatches(line('E', 'Zygote', 'fork'), 'V', 'wifi')).toBe(false);
  });
});
