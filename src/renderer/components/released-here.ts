import type { Device } from '../../shared/api/sessions.js';
import { api } from '../app-context.js';

/**
 * The allocations this tab released, so that the session's list of releases says "you" for them even where the API's
 * releasedBy does not (releases made before the lab recorded it). Kept in the tab's sessionStorage, as its token is, so
 * that a reload still knows.
 */
const KEY = 'benchtop.releasedHere';

function releasedHere(): string[] {
  try {
    return JSON.parse(sessionStorage.getItem(KEY) ?? '[]') as string[];
  } catch {
    return [];
  }
}

/** The allocation just released from this tab, whose line in the session's releases takes the focus its button had. */
let focusPending: string | undefined;

/** Releases a held phone, or leaves the queue for one, and remembers that this person did. */
export async function releaseByMe(sessionId: string, device: Device): Promise<void> {
  await api.releaseDevice(sessionId, device.info.serial ?? device.id);
  focusPending = device.id;
  // The newest hundred are plenty for a session's list of releases.
  sessionStorage.setItem(KEY, JSON.stringify([device.id, ...releasedHere().filter((id) => id !== device.id)].slice(0, 100)));
}

export const wasReleasedHere = (allocationId: string) => releasedHere().includes(allocationId);

/**
 * Whether the line saying how this allocation ended should take the focus: once, right after this tab released it and
 * the button pressed for it went away with the phone (focus is then nowhere, on the page's body).
 */
export function takesFocusAfterRelease(allocationId: string): boolean {
  if (focusPending !== allocationId) return false;
  focusPending = undefined;
  return document.activeElement === null || document.activeElement === document.body;
}
