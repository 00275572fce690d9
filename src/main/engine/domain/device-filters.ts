import { invalid } from './errors.js';
import { FILTER_OPERATORS, type DeviceFilter } from '../../../shared/device-filters.js';

export { compareVersions, matches, type DeviceFilter, type MatchableDevice } from '../../../shared/device-filters.js';

const VALUES: Record<string, readonly string[]> = { platform: ['ios', 'android'], type: ['real'] };
const DOTTED_NUMBER = /^\d+(\.\d+)*$/;

/** Checks a filter list against the spec's rules; any violation is a 400 naming the filter. */
export function checkFilters(filters: readonly DeviceFilter[]): DeviceFilter[] {
  filters.forEach((f, i) => {
    const where = `filters[${i}]`;
    const operators = FILTER_OPERATORS[f.attribute];
    if (!operators) {
      throw invalid('invalid_filter', `${where}: unknown attribute "${f.attribute}"; use ${Object.keys(FILTER_OPERATORS).join(', ')}.`);
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
