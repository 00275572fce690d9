/**
 * The simulated phone's screen draws each new picture over the canvas of one no longer shown (new memory for every
 * picture of a moving screen was mostly page faults), so a canvas is drawn over only once nothing reads it: a JPEG
 * still encoding on sharp's threads keeps its picture, and what screenrecord is handed is its own copy.
 */
import { decode as decodeJpeg } from 'jpeg-js';
import { describe, expect, it } from 'vitest';
import { Device, NOTES_PACKAGE, SETTINGS_PACKAGE } from '../../src/sim/android/device.js';
import { Screen } from '../../src/sim/android/screen.js';
import { letterbox } from '../../src/sim/android/screenrecord.js';

function phone(): { device: Device; screen: Screen } {
  const device = new Device({
    model: 'Canvas Sim', manufacturer: 'Benchtop', brand: 'benchtop', productName: 'canvassim', deviceName: 'canvassim',
    osVersion: '13', sdk: 33, serialNo: 'SIMCANVAS', battery: 77, width: 1080, height: 2400, density: 420, installMs: 0,
    abi: 'arm64-v8a', refreshRate: 60, minicapCapture: true,
  });
  device.wake();
  device.unlock();
  return { device, screen: new Screen(device) };
}

/** Mean absolute difference per channel of two RGBA pictures of one size. */
function difference(a: Uint8Array, b: Uint8Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) if (i % 4 !== 3) sum += Math.abs(a[i]! - b[i]!);
  return sum / ((a.length / 4) * 3);
}

describe("the simulated phone's screen canvas", () => {
  it('draws the next picture over the last one only once its JPEG has been encoded, and screenrecord gets a copy', async () => {
    const { device, screen } = phone();
    device.launch(SETTINGS_PACKAGE);
    const settings = Buffer.from(screen.canvas().data);
    const recorded = letterbox(screen.canvas(), 1080, 2400);
    expect(recorded.buffer).not.toBe(screen.canvas().data.buffer);
    const encoding = screen.jpeg(1080, 2400, 90);

    // The screen changes while the JPEG encodes: the new picture is drawn at once (and pictures after it too).
    device.launch(NOTES_PACKAGE);
    const notes = Buffer.from(screen.canvas().data);
    expect(difference(notes, settings)).toBeGreaterThan(5);
    device.launch(SETTINGS_PACKAGE);
    screen.canvas();
    device.launch(NOTES_PACKAGE);
    expect(screen.canvas().data.equals(notes)).toBe(true);

    const jpeg = decodeJpeg(await encoding, { useTArray: true });
    expect(difference(jpeg.data, settings)).toBeLessThan(3);
    expect(difference(jpeg.data, notes)).toBeGreaterThan(5);
    expect(recorded.equals(settings)).toBe(true);
  });

  it('reuses the canvas of a picture no longer shown: a moving screen keeps drawing into the same memory', () => {
    const { device, screen } = phone();
    const seen = new Set<ArrayBufferLike>();
    for (let i = 0; i < 10; i++) {
      device.launch(i % 2 ? NOTES_PACKAGE : SETTINGS_PACKAGE);
      seen.add(screen.canvas().data.buffer);
    }
    expect(seen.size).toBeLessThanOrEqual(2);

    // Turned: the pictures are another size, and after the first of them the turned ones reuse memory again.
    device.settings.system.set('user_rotation', '1');
    device.changed();
    const turned = new Set<ArrayBufferLike>();
    for (let i = 0; i < 10; i++) {
      device.launch(i % 2 ? NOTES_PACKAGE : SETTINGS_PACKAGE);
      const canvas = screen.canvas();
      expect([canvas.width, canvas.height]).toEqual([2400, 1080]);
      turned.add(canvas.data.buffer);
    }
    expect(turned.size).toBeLessThanOrEqual(2);
  });
});
