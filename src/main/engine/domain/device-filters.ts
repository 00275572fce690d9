import { invalid } from './errors.js';

/** One element of an allocation request: ANDed with the others. */
export interface DeviceFilter {
  attribute: string;
  operator: string;
  value: string;
}

/** What a filter can see of a phone. */
export interface MatchableDevice {
  platform: string;
  type: string;
  name: string;
  osVersion: string;
}

const OPERATORS: Record<string, readonly string[]> = {
  platform: ['EQUALS'],
  type: ['EQUALS'],
  name: ['EQUALS', 'STARTS_WITH', 'CONTAINS'],
  version: ['EQUALS', 'GREATER_THAN', 'GREATER_THAN_OR_EQUALS', 'LESS_THAN', 'LESS_THAN_OR_EQUALS'],
};
const VALUES: Record<string, readonly string[]> = { platform: ['ios', 'android'], type: ['real'] };
const DOTTED_NUMBER = /^\d+(\.\d+)*$/;

/** Checks a filter list against the spec's rules; any violation is a 400 naming the filter. */
export function checkFilters(filters: readonly DeviceFilter[]): DeviceFilter[] {
  filters.forEach((f, i) => {
    const where = `filters[${i}]`;
    const operators = OPERATORS[f.attribute];
    if (!operators) {
      throw invalid('invalid_filter', `${where}: unknown attribute "${f.attribute}"; use ${Object.keys(OPERATORS).join(', ')}.`);
    }
    if (!operators.includes(f.operator)) {
      throw invalid('invalid_filter', `${where}: ${f.attribute} accepts ${operators.join(', ')}, not "${f.operator}".`);
    }
    if (f.value.trim() === '') throw invalid('invalid_filter', `${where}: the value must not be empty.`);
    const allowed = VALUES[f.attribute];
    if (allowed && !allowed.includes(f.value)) {
      throw invalid('invalid_filter', `${where}: ${f.attribute} must be ${allowed.join(' or ')}, not "${f.value}".`);
    }
    if (f.attribute === 'version' && !DOTTED_NUMBER.test(f.value)) {
      throw invalid('invalid_filter', `${where}: version must be numbers separated by dots, like 14 or 17.4.1.`);
    }
  });
  if (!filters.some((f) => f.attribute === 'platform' && f.operator === 'EQUALS')) {
    throw invalid('invalid_filter', 'A platform EQUALS filter is required (ios or android).');
  }
  return [...filters];
}

/**
 * Compares dotted versions numerically, part by part, missing parts being 0: "18" equals "18.0.0" and "9" is
 * below "10". A device version with non-numeric parts ("14-beta") uses each part's leading digits.
 */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map((p) => parseInt(p, 10) || 0);
  const pb = b.split('.').map((p) => parseInt(p, 10) || 0);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  return 0;
}

function matchesOne(device: MatchableDevice, f: DeviceFilter): boolean {
  switch (f.attribute) {
    case 'platform':
      return device.platform === f.value;
    case 'type':
      return device.type === f.value;
    case 'name': {
      // Names are matched without regard to case: "pixel" finds a "Pixel 8".
      const name = device.name.toLowerCase();
      const value = f.value.toLowerCase();
      if (f.operator === 'EQUALS') return name === value;
      if (f.operator === 'STARTS_WITH') return name.startsWith(value);
      return name.includes(value);
    }
    case 'version': {
      const c = compareVersions(device.osVersion, f.value);
      switch (f.operator) {
        case 'EQUALS':
          return c === 0;
        case 'GREATER_THAN':
          return c > 0;
        case 'GREATER_THAN_OR_EQUALS':
          return c >= 0;
        case 'LESS_THAN':
          return c < 0;
        default:
          return c <= 0;
      }
    }
    default:
      return false;
  }
}

export function matches(device: MatchableDevice, filters: readonly DeviceFilter[]): boolean {
  return filters.every((f) => matchesOne(device, f));
}
