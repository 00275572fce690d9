/**
 * vitest's global setup: the run's network hub (test/support/netns.ts), made before any test file starts (and so
 * before any Chromium) and removed after the last, so that no address of this host comes or goes during the run.
 * Where namespaces cannot be made (not root), there is no hub, and the tests that need one say so (netnsOrSkip).
 */
import { makeHub, removeHub, shareHub } from './netns.js';

export default function setup(): (() => void) | undefined {
  let hub;
  try {
    hub = makeHub();
  } catch {
    return undefined;
  }
  shareHub(hub);
  return () => removeHub(hub);
}
