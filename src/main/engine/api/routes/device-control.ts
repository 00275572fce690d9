import { Type } from 'typebox';
import { List } from '../../../../shared/api/common.js';
import { ActionResult, DeviceActionBody, UiElement } from '../../../../shared/api/devices.js';
import { conflict, ServiceError } from '../../domain/errors.js';
import type { DeviceAction } from '../../fleet/types.js';
import { requireRole } from '../../services/auth.js';
import type { EngineContext } from '../../services/context.js';
import { BEARER, OrganizationHeader, responses, scopeOf, type App } from '../http.js';
import { list } from '../present.js';
import { DeviceParams } from './devices.js';

/** A phone that fails a command is a conflict with its state, not a bug of ours: the caller may retry. */
async function onPhone<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof ServiceError) throw error;
    throw conflict('device_error', `The device did not complete the command: ${(error as Error).message}`);
  }
}

/** Driving an in_use phone of the caller's session: what the GUI's live screen and the assistant use. */
export function deviceControlRoutes(app: App, ctx: EngineContext): void {
  const tags = ['Extensions'];
  const errors = [401, 403, 404, 409] as const;

  app.get('/sessions/:sessionId/devices/:deviceId/screenshot', {
    schema: { tags, operationId: 'deviceScreenshot', summary: 'The device\'s screen as PNG', security: BEARER, headers: OrganizationHeader, params: DeviceParams, response: responses({ 200: Type.Unsafe<Buffer>({ type: 'string', format: 'binary', description: 'image/png' }) }, errors) },
  }, async (req, reply) => {
    const driver = ctx.devices.driverFor(scopeOf(ctx, req), req.params.sessionId, req.params.deviceId);
    const png = await onPhone(() => driver.screenshot());
    return reply.type('image/png').header('cache-control', 'no-store').send(png);
  });

  app.get('/sessions/:sessionId/devices/:deviceId/elements', {
    schema: { tags, operationId: 'deviceElements', summary: 'The UI elements on screen, flattened from the hierarchy', security: BEARER, headers: OrganizationHeader, params: DeviceParams, response: responses({ 200: List(UiElement) }, errors) },
  }, async (req) => {
    const driver = ctx.devices.driverFor(scopeOf(ctx, req), req.params.sessionId, req.params.deviceId);
    return list(await onPhone(() => driver.elements()));
  });

  app.post('/sessions/:sessionId/devices/:deviceId/actions', {
    schema: { tags, operationId: 'deviceAction', summary: 'Tap, swipe, type, press a button, launch or stop an app, open a URL, rotate', security: BEARER, headers: OrganizationHeader, params: DeviceParams, body: DeviceActionBody, response: responses({ 200: ActionResult }, [400, ...errors]) },
  }, async (req) => {
    const scope = scopeOf(ctx, req);
    requireRole(scope.role, 'readwrite');
    const driver = ctx.devices.driverFor(scope, req.params.sessionId, req.params.deviceId);
    return onPhone(() => driver.act(req.body as DeviceAction));
  });
}
