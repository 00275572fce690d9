import type { InstallBody, InstallResult } from '../../../shared/api/files.js';
import { conflict, invalid, ServiceError } from '../domain/errors.js';
import { requireRole } from './auth.js';
import type { EngineContext, Scope } from './context.js';

/** A phone that fails the install is a conflict with its state (storage full, a downgrade), not a bug of ours. */
async function onPhone(work: () => Promise<unknown>, what: string): Promise<void> {
  try {
    await work();
  } catch (error) {
    if (error instanceof ServiceError) throw error;
    throw conflict('device_error', `The device did not ${what}: ${(error as Error).message}`);
  }
}

/**
 * Installs a ready file on an in_use device of the session. The allocation recorded the phone's packages before it
 * went in_use, so the cleanup after release uninstalls what this adds.
 */
export async function installFile(ctx: EngineContext, scope: Scope, sessionId: string, serial: string, body: InstallBody): Promise<InstallResult> {
  requireRole(scope.role, 'readwrite');
  const device = ctx.devices.find(scope, sessionId, serial);
  const file = ctx.files.readyFile(scope, body.file);
  const driver = ctx.devices.driverFor(scope, sessionId, serial);
  if (file.platform !== device.platform) {
    throw invalid('wrong_platform', `The file is an ${file.platform} app; the device is ${device.platform}.`);
  }
  await onPhone(() => driver.install(ctx.files.pathOf(file)), 'install the app');
  if (body.launch) await onPhone(() => driver.act({ type: 'launchApp', packageName: file.bundleId! }), 'launch the app');
  return { file: file.id, status: 'installed', bundleId: file.bundleId!, launched: body.launch === true };
}
