import type { Device } from '../../shared/api/sessions.js';
import { api } from '../app-context.js';

/**
 * The allocations this tab released, so that the session's list of releases says "you" for them. The API's release
 * carries no releaser (a release by a person has no releaseReason at all), and this tab is the one place that knows.
 * Kept in the tab's sessionStorage, as its token is, so that a reload still knows.
 */
const KEY = 'benchtop.releasedHere';

function releasedHere(): string[] {
  try {
    return JSON.parse(sessionStorage.getItem(KEY) ?? '[]') as string[];
  } catch {
    return [];
  }
}

/** Releases a held phone, or leaves the queue for one, and remembers that this person did. */
export async function releaseByMe(sessionId: string, device: Device): Promise<void> {
  await api.releaseDevice(sessionId, device.info.serial ?? device.id);
  // The newest hundred are plenty for a session's list of releases.
  sessionStorage.setItem(KEY, JSON.stringify([device.id, ...releasedHere().filter((id) => id !== device.id)].slice(0, 100)));
}

export const wasReleasedHere = (allocationId: string) => releasedHere().includes(allocationId);
