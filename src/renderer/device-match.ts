/**
 * Which phones of the fleet an allocation's filters match, computed in the page so that the filter builder and the
 * Fleet screen show the count before anyone allocates. The rules are the engine's (src/shared/device-filters.ts):
 * filters are ANDed, names match without regard to case, versions compare numerically by dotted parts.
 */
import type { FleetDevice } from '../shared/api/devices.js';
import { compareVersions, matches, type DeviceFilter } from '../shared/device-filters.js';

export type Filter = DeviceFilter;
export { compareVersions };

/** Empty rows are left out, as the allocation form leaves them out of the request. */
export function matchesFilters(device: Pick<FleetDevice, 'platform' | 'type' | 'name' | 'osVersion'>, filters: readonly Filter[]): boolean {
  const given = filters.map((f) => ({ ...f, value: f.value.trim() })).filter((f) => f.value !== '');
  // A version still being typed ("1", "14.") matches nothing rather than everything.
  if (given.some((f) => f.attribute === 'version' && !/^\d+(\.\d+)*$/.test(f.value))) return false;
  return matches(device, given);
}

/** A phone the lab has now (not unplugged), and whether someone could take it at once. */
export const isAttached = (d: FleetDevice) => d.state !== 'gone';
export const isFree = (d: FleetDevice) => d.state === 'device' && !d.held;

/** How many attached phones match, and how many of them are free now. */
export function matchCount(devices: readonly FleetDevice[], filters: readonly Filter[]): { matching: number; free: number } {
  const matching = devices.filter((d) => isAttached(d) && matchesFilters(d, filters));
  return { matching: matching.length, free: matching.filter(isFree).length };
}
