import { describe, expect, it } from 'vitest';
import { INFO_COMMAND, parseDeviceInfo } from './driver.js';

const M = '@@benchtop-info@@\n';

describe('reading a phone\'s details from one shell command', () => {
  it('asks for every part after a marker of its own', () => {
    expect(INFO_COMMAND.split('echo @@benchtop-info@@').length - 1).toBe(10);
  });

  it('parses what Android prints, preferring an override size and density', () => {
    const out = [
      'Google\n', 'Pixel 8\n', '14\n', '34\n', 'arm64-v8a\n',
      'Physical size: 1080x2400\nOverride size: 720x1600\n',
      'Physical density: 420\n',
      'Current Battery Service state:\n  AC powered: false\n  USB powered: true\n  Wireless powered: false\n  level: 57\n  scale: 100\n',
      '1\n', '0\n',
    ].map((p) => M + p).join('');
    expect(parseDeviceInfo('SER1', out)).toEqual({
      serial: 'SER1', platform: 'android', manufacturer: 'Google', model: 'Pixel 8', osVersion: '14', sdk: 34, abi: 'arm64-v8a',
      screen: { width: 720, height: 1600, density: 420 },
      battery: { level: 57, charging: true },
      network: { wifi: true, airplaneMode: false },
    });
  });

  it('answers null for what the phone did not say', () => {
    const info = parseDeviceInfo('SER2', [M + 'x\n', M + 'y\n', M + '9\n', M + '\n', M + 'armeabi-v7a\r\n', M + '', M + '', M + 'Error\n', M + 'null\n', M + 'null\n'].join(''));
    expect(info).toMatchObject({ sdk: null, abi: 'armeabi-v7a', screen: { width: null, height: null, density: null }, battery: { level: null, charging: null }, network: { wifi: null, airplaneMode: null } });
  });
});
