import { describe, expect, it } from 'vitest';
import { checkFilters, compareVersions, matches, type DeviceFilter } from './device-filters.js';
import { matchesDeviceName } from '../../../shared/device-filters.js';
import { ServiceError } from './errors.js';

const pixel = { platform: 'android', type: 'real', name: 'Pixel 8 Pro', osVersion: '14' };
const f = (attribute: string, operator: string, value: string): DeviceFilter => ({ attribute, operator, value });
const android = f('platform', 'EQUALS', 'android');

describe('compareVersions', () => {
  it.each([
    ['18', '18.0.0', 0],
    ['18.0.1', '18', 1],
    ['9', '10', -1],
    ['10', '9.9.9', 1],
    ['14', '14.0', 0],
    ['17.4.1', '17.4', 1],
    ['17.4', '17.10', -1],
    ['14-beta', '14', 0],
    ['', '0', 0],
  ])('%s vs %s is %d', (a, b, expected) => {
    expect(compareVersions(a, b)).toBe(expected);
  });
});

describe('matches', () => {
  it.each([
    [[android], true],
    [[f('platform', 'EQUALS', 'ios')], false],
    [[android, f('type', 'EQUALS', 'real')], true],
    [[android, f('name', 'EQUALS', 'pixel 8 pro')], true],
    [[android, f('name', 'EQUALS', 'Pixel 8')], false],
    [[android, f('name', 'STARTS_WITH', 'Pixel')], true],
    [[android, f('name', 'STARTS_WITH', '8')], false],
    [[android, f('name', 'CONTAINS', '8 p')], true],
    [[android, f('name', 'CONTAINS', 'Galaxy')], false],
    [[android, f('version', 'EQUALS', '14.0.0')], true],
    [[android, f('version', 'EQUALS', '13')], false],
    [[android, f('version', 'GREATER_THAN', '13.9')], true],
    [[android, f('version', 'GREATER_THAN', '14')], false],
    [[android, f('version', 'GREATER_THAN_OR_EQUALS', '14')], true],
    [[android, f('version', 'LESS_THAN', '14')], false],
    [[android, f('version', 'LESS_THAN', '14.0.1')], true],
    [[android, f('version', 'LESS_THAN_OR_EQUALS', '14')], true],
    [[android, f('version', 'GREATER_THAN_OR_EQUALS', '14'), f('version', 'LESS_THAN', '16')], true],
    [[android, f('version', 'GREATER_THAN_OR_EQUALS', '12'), f('version', 'LESS_THAN', '14')], false],
  ])('%j is %s', (filters, expected) => {
    expect(matches(pixel, filters as DeviceFilter[])).toBe(expected);
  });
});

describe('deviceName: a phone as WebDriver suites name it', () => {
  const alices = { platform: 'ios', type: 'real', name: "Alice's iPhone", osVersion: '17.5', model: 'iPhone15,4' };
  const pixel7 = { platform: 'android', type: 'real', name: 'Pixel 7', osVersion: '14', model: 'Pixel 7' };
  const galaxy = { platform: 'android', type: 'real', name: 'Test bench 3', osVersion: '14', model: 'SM-S911B' };
  it.each([
    [alices, "alice's iphone", true],
    [alices, 'iPhone 15', true],
    [alices, 'Apple iPhone 15', true],
    [alices, 'iphone15,4', true],
    [alices, 'iPhone 15 Pro', false],
    [alices, 'iPhone.*', true],
    [alices, '.*15', true],
    [alices, 'iPhone 1.*', true],
    [alices, 'iPhone 14.*', false],
    [pixel7, 'Google Pixel 7', true],
    [pixel7, 'Google Pixel.*', true],
    [pixel7, 'Samsung Galaxy.*', false],
    // Only a maker's name is dropped: "Pixel 7" is not "Phone 7" without its first word.
    [pixel7, 'My Pixel 7', false],
    [pixel7, '7', false],
    [galaxy, 'Test bench 3', true],
    [galaxy, 'SM-S911B', true],
    // Samsung's model number is the phone's own name for itself; the catalog's is its marketing name.
    [galaxy, 'Samsung Galaxy S23', true],
    [galaxy, 'Galaxy S23 Ultra', false],
    [{ ...galaxy, model: 'SM-A546U1' }, 'Samsung Galaxy A54', true],
    [{ ...galaxy, model: 'SM-A546U1' }, 'Galaxy A54 5G', true],
    [{ ...galaxy, model: 'SM-X999B' }, 'Samsung Galaxy.*', false],
    [galaxy, '.*', true],
    // `.*` is the one wildcard; any other character is itself.
    [galaxy, 'SM-S9.1B', false],
    [galaxy, 'SM.*S9.*B', true],
    [galaxy, 'SM.*B.*B', false],
    [galaxy, 'Galaxy S2.*', true],
  ])('%o named %s: %s', (phone, name, expected) => {
    expect(matchesDeviceName(phone, name)).toBe(expected);
    expect(matches(phone, [f('deviceName', 'EQUALS', name)])).toBe(expected);
  });

  it('takes time in proportion to the name, whatever the pattern', () => {
    const long = { ...galaxy, name: 'a'.repeat(100_000) };
    const started = performance.now();
    expect(matchesDeviceName(long, `${'a.*'.repeat(5_000)}b`)).toBe(false);
    expect(performance.now() - started).toBeLessThan(1000);
  });
});

describe('checkFilters', () => {
  const code = (filters: DeviceFilter[]) => {
    try {
      checkFilters(filters);
      return 'ok';
    } catch (e) {
      return `${(e as ServiceError).kind}:${(e as ServiceError).code}`;
    }
  };
  it.each([
    ['no filters', []],
    ['no platform filter', [f('name', 'EQUALS', 'Pixel')]],
    ['unknown attribute', [android, f('color', 'EQUALS', 'red')]],
    ['platform with CONTAINS', [f('platform', 'CONTAINS', 'and')]],
    ['type with STARTS_WITH', [android, f('type', 'STARTS_WITH', 're')]],
    ['name with GREATER_THAN', [android, f('name', 'GREATER_THAN', 'A')]],
    ['version with CONTAINS', [android, f('version', 'CONTAINS', '1')]],
    ['empty value', [android, f('name', 'EQUALS', '')]],
    ['blank value', [android, f('name', 'EQUALS', '  ')]],
    ['platform windows', [f('platform', 'EQUALS', 'windows')]],
    ['platform in capitals', [f('platform', 'EQUALS', 'Android')]],
    ['type emulator', [android, f('type', 'EQUALS', 'emulator')]],
    ['version not numeric', [android, f('version', 'EQUALS', 'fourteen')]],
    ['version with a trailing dot', [android, f('version', 'EQUALS', '14.')]],
    ['unknown operator', [android, f('version', 'BETWEEN', '14')]],
  ])('refuses %s', (_name, filters) => {
    expect(code(filters as DeviceFilter[])).toBe('invalid:invalid_filter');
  });

  it('accepts the same attribute twice and every valid operator', () => {
    expect(code([f('platform', 'EQUALS', 'ios'), f('type', 'EQUALS', 'real'), f('name', 'CONTAINS', 'iPhone'),
      f('version', 'GREATER_THAN_OR_EQUALS', '17'), f('version', 'LESS_THAN', '18.2')])).toBe('ok');
  });
});
