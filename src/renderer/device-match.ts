/**
 * Which phones of the fleet an allocation's filters match, computed in the page so that the filter builder and the
 * Fleet screen show the count before anyone allocates. The rules are the engine's (domain/device-filters.ts):
 * filters are ANDed, names match without regard to case, versions compare numerically by dotted parts.
 */
import type { FleetDevice } from '../shared/api/devices.js';

export interface Filter {
  attribute: string;
  operator: string;
  value: string;
}

export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map((p) => parseInt(p, 10) || 0);
  const pb = b.split('.').map((p) => parseInt(p, 10) || 0);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  return 0;
}

function matchesOne(device: Pick<FleetDevice, 'platform' | 'type' | 'name' | 'osVersion'>, f: Filter): boolean {
  const value = f.value.trim();
  switch (f.attribute) {
    case 'platform':
      return device.platform === value;
    case 'type':
      return device.type === value;
    case 'name': {
      const name = device.name.toLowerCase();
      const v = value.toLowerCase();
      if (f.operator === 'EQUALS') return name === v;
      if (f.operator === 'STARTS_WITH') return name.startsWith(v);
      return name.includes(v);
    }
    case 'version': {
      // A version still being typed ("1", "14.") matches nothing rather than everything.
      if (!/^\d+(\.\d+)*$/.test(value)) return false;
      const c = compareVersions(device.osVersion, value);
      switch (f.operator) {
        case 'EQUALS': return c === 0;
        case 'GREATER_THAN': return c > 0;
        case 'GREATER_THAN_OR_EQUALS': return c >= 0;
        case 'LESS_THAN': return c < 0;
        case 'LESS_THAN_OR_EQUALS': return c <= 0;
        default: return false;
      }
    }
    default:
      return false;
  }
}

/** Empty rows are left out, as the allocation form leaves them out of the request. */
export function matchesFilters(device: Pick<FleetDevice, 'platform' | 'type' | 'name' | 'osVersion'>, filters: readonly Filter[]): boolean {
  return filters.filter((f) => f.value.trim() !== '').every((f) => matchesOne(device, f));
}

/** A phone the lab has now (not unplugged), and whether someone could take it at once. */
export const isAttached = (d: FleetDevice) => d.state !== 'gone';
export const isFree = (d: FleetDevice) => d.state === 'device' && !d.held;

/** How many attached phones match, and how many of them are free now. */
export function matchCount(devices: readonly FleetDevice[], filters: readonly Filter[]): { matching: number; free: number } {
  const matching = devices.filter((d) => isAttached(d) && matchesFilters(d, filters));
  return { matching: matching.length, free: matching.filter(isFree).length };
}
