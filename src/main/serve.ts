/**
 * Headless entry (npm run serve): the same engine as the desktop app, with no Electron import.
 */
import { loadConfig } from './engine/config.js';
import { createEngine } from './engine/engine.js';

const config = loadConfig(process.env);
const engine = createEngine(config);

try {
  const { url, owner } = await engine.start();
  if (owner.created) {
    console.log(`Created the lab owner account: ${owner.email}`);
    if (owner.generatedPassword) {
      console.log(`Its password, shown only this once: ${owner.generatedPassword}`);
      console.log('Set BENCHTOP_OWNER_PASSWORD on the first start to choose it yourself.');
    }
  }
  console.log(`Benchtop is serving ${url}/api/v1 (data: ${config.dataDir})`);
} catch (error) {
  console.error(`Benchtop could not start: ${(error as Error).message}`);
  process.exit(1);
}

let signalled = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (signalled) return;
    signalled = true;
    console.log(`${signal}: finishing in-flight requests, then closing the database.`);
    engine.stop().then(
      () => process.exit(0),
      (error: Error) => {
        console.error(`Shutdown failed: ${error.message}`);
        process.exit(1);
      },
    );
  });
}
