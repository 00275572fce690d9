/** Builds the renderer once for the whole run (only when a source changed), before any engine serves it. */
import { buildRenderer } from '../../../scripts/build-renderer.mjs';

export default async function setup(): Promise<void> {
  await buildRenderer();
}
