/**
 * Placeholder page. It asks /api/v1 on its own origin, as every client of the engine does, so the same build works
 * in the desktop window and in a teammate's browser.
 */
import type { Static } from 'typebox';
import type { Health } from '../shared/api/common.js';

const output = document.querySelector<HTMLOutputElement>('#health')!;

async function showHealth(): Promise<void> {
  try {
    const response = await fetch('/api/v1/health');
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const { status, version } = (await response.json()) as Static<typeof Health>;
    output.value = `${status} (engine ${version})`;
  } catch (error) {
    output.value = `unreachable: ${(error as Error).message}`;
  }
}

void showHealth();
