import { describe, expect, it } from 'vitest';
import type { FleetDevice } from '../shared/api/devices.js';
import { matchCount, matchesFilters } from './device-match.js';

const phone = (name: string, osVersion: string, extra: Partial<FleetDevice> = {}): FleetDevice => ({
  platform: 'android', type: 'real', name, osVersion, serial: name, state: 'device', battery: 50, host: null, held: false, lastSeenAt: '2026-01-01T00:00:00Z', ...extra,
});
const android = { attribute: 'platform', operator: 'EQUALS', value: 'android' };

describe('matching the fleet against allocation filters', () => {
  it('ANDs filters, matches names without case and versions numerically', () => {
    expect(matchesFilters(phone('Pixel 8', '14'), [android, { attribute: 'name', operator: 'STARTS_WITH', value: 'pixel' }])).toBe(true);
    expect(matchesFilters(phone('Pixel 8', '9'), [android, { attribute: 'version', operator: 'GREATER_THAN_OR_EQUALS', value: '10' }])).toBe(false);
    expect(matchesFilters(phone('Pixel 8', '14.1'), [android, { attribute: 'version', operator: 'LESS_THAN', value: '14.2' }])).toBe(true);
    expect(matchesFilters(phone('Pixel 8', '14'), [{ ...android, value: 'ios' }])).toBe(false);
  });

  it('leaves empty rows out, and a half-typed version matches nothing', () => {
    expect(matchesFilters(phone('Pixel 8', '14'), [android, { attribute: 'name', operator: 'CONTAINS', value: ' ' }])).toBe(true);
    expect(matchesFilters(phone('Pixel 8', '14'), [android, { attribute: 'version', operator: 'EQUALS', value: '14.' }])).toBe(false);
  });

  it('counts attached matches and the free ones among them', () => {
    const fleet = [phone('Pixel 8', '14'), phone('Pixel 7', '13', { held: true }), phone('Pixel 6', '12', { state: 'gone' }), phone('Galaxy', '14', { state: 'offline' })];
    expect(matchCount(fleet, [android])).toEqual({ matching: 3, free: 1 });
    expect(matchCount(fleet, [android, { attribute: 'name', operator: 'CONTAINS', value: 'pixel' }])).toEqual({ matching: 2, free: 1 });
  });
});
