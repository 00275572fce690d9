import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { ErrorBody, List } from '../../../../shared/api/common.js';
import { FileApp, PhoneApp, PhoneFile, PhonePathQuery, Recording } from '../../../../shared/api/devices.js';
import type { DeviceControl, DeviceTarget } from '../../services/device-control.js';
import type { FeedEnd } from '../../services/live-screen.js';
import { MAX_TERMINAL_SIDE } from '../../services/terminals.js';
import { BEARER, OrganizationHeader, responses, scopeOf, SOCKET_QUERY, type App } from '../http.js';
import { served } from '../media.js';
import { list } from '../presenters/common.js';
import { DeviceParams } from './devices.js';
import { drain } from './files.js';
import { MAX_CONTROL_BACKLOG, resizeOf } from './instances.js';

const target = (req: { params: { sessionId: string; deviceId: string } }): DeviceTarget => ({ sessionId: req.params.sessionId, serial: req.params.deviceId });

/** How a phone's shell closes, so that a client can tell an exit from a released phone without parsing text. */
const SHELL_CLOSE: Record<FeedEnd | 'exited' | 'lost', [code: number, reason: string]> = {
  exited: [1000, 'the shell exited'],
  lost: [1011, 'connection to the phone lost'],
  device_released: [4001, 'device released'],
  device_offline: [4002, 'device offline'],
  capture_failed: [1011, 'connection to the phone lost'],
  shutdown: [1001, 'Benchtop is shutting down'],
};

const Side = (what: string, fallback: number) => Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_TERMINAL_SIDE, default: fallback, description: `${what} of the terminal.` }));

/**
 * The phone page's toolbox, as STF and Android Studio offer it: a shell, a file explorer, the installed apps, screen
 * recording and a lossless screenshot. Each goes through the one device-control core, so the same rule holds: the
 * caller's organization holds the phone in an in_use allocation.
 */
export function phoneToolboxRoutes(app: App, control: DeviceControl): void {
  const tags = ['Extensions'];
  const errors = [401, 403, 404, 409] as const;

  app.get('/sessions/:sessionId/devices/:deviceId/screenshot.png', {
    schema: { tags, operationId: 'deviceScreenshotPng', summary: 'A lossless PNG of the device\'s screen, captured now', description: 'Unlike .../screenshot, never the live screen\'s JPEG: what a person saves as a screenshot.', security: BEARER, headers: OrganizationHeader, params: DeviceParams, response: responses({ 200: served(['image/png'], 'The bytes, as image/png.') }, errors) },
  }, async (req, reply) => reply.type('image/png').header('cache-control', 'no-store').send(await control.capture(scopeOf(req), target(req))));

  app.get('/sessions/:sessionId/devices/:deviceId/apps', {
    schema: { tags, operationId: 'deviceApps', summary: 'The apps installed on the device (not its system apps)', description: 'Launch, stop, uninstall and clear data go through .../actions (launchApp, terminateApp, uninstallApp, clearAppData).', security: BEARER, headers: OrganizationHeader, params: DeviceParams, response: responses({ 200: List(PhoneApp) }, errors) },
  }, async (req) => list(await control.apps(scopeOf(req), target(req))));

  const byApp = 'On an iPhone the files are an app\'s Documents, through house_arrest (VendDocuments) and AFC: app= names the app ' +
    '(400 app_required without it), the path is under /Documents, 404 app_not_found for an app that is not installed and 409 ' +
    'documents_not_shared for one that does not share its Documents (UIFileSharingEnabled).';

  app.get('/sessions/:sessionId/devices/:deviceId/files/apps', {
    schema: { tags, operationId: 'deviceFileApps', summary: 'The iPhone apps whose Documents the file explorer opens (UIFileSharingEnabled)', description: 'As `ifuse --list-apps` finds them, through installation_proxy. 409 files_by_folder on Android, whose files are browsed by folder.', security: BEARER, headers: OrganizationHeader, params: DeviceParams, response: responses({ 200: List(FileApp) }, errors) },
  }, async (req) => list((await control.fileApps(scopeOf(req), target(req))).map((a) => ({ packageName: a.bundleId, name: a.name }))));

  app.get('/sessions/:sessionId/devices/:deviceId/files', {
    schema: { tags, operationId: 'deviceFiles', summary: 'The entries of a folder on the device (Android: /sdcard and /data/local/tmp, over adb sync; iPhone: an app\'s Documents)', description: `Folders first. 400 path_not_allowed outside those folders; 404 file_not_found for a missing folder. ${byApp}`, security: BEARER, headers: OrganizationHeader, params: DeviceParams, querystring: PhonePathQuery, response: responses({ 200: List(PhoneFile) }, [400, ...errors]) },
  }, async (req) => list((await control.listFiles(scopeOf(req), target(req), req.query.path, req.query.app)).map((e) => ({ name: e.name, path: e.path, type: e.type, size: e.size, modifiedAt: e.modifiedAt.toISOString() }))));

  app.get('/sessions/:sessionId/devices/:deviceId/files/content', {
    schema: { tags, operationId: 'downloadDeviceFile', summary: 'A file\'s bytes, as adb pull (or AFC on an iPhone) reads them', description: byApp, security: BEARER, headers: OrganizationHeader, params: DeviceParams, querystring: PhonePathQuery, response: responses({ 200: served(['application/octet-stream'], 'The bytes, as application/octet-stream.') }, [400, ...errors]) },
  }, async (req, reply) => {
    const content = await control.readFile(scopeOf(req), target(req), req.query.path, req.query.app);
    const name = req.query.path.split('/').pop() || 'file';
    return reply.type('application/octet-stream').header('content-disposition', `attachment; filename="${name.replace(/["\\\r\n]/g, '_')}"`).send(content);
  });

  app.delete('/sessions/:sessionId/devices/:deviceId/files', {
    schema: { tags, operationId: 'deleteDeviceFile', summary: 'Delete a file, or a folder with what is in it (Android: rm -r; iPhone: AFC\'s RemovePathAndContents)', description: `400 path_not_allowed for a root folder itself; 404 file_not_found when there is nothing at the path. ${byApp}`, security: BEARER, headers: OrganizationHeader, params: DeviceParams, querystring: PhonePathQuery, response: responses({ 204: Type.Null() }, [400, ...errors]) },
  }, async (req, reply) => {
    await control.deleteFile(scopeOf(req), target(req), req.query.path, req.query.app);
    return reply.code(204).send();
  });

  // The upload reads its body as a stream, so no parser may buffer it: it gets a scope of its own.
  app.register(async (instance) => {
    instance.removeAllContentTypeParsers();
    instance.addContentTypeParser('*', (_request, _payload, done) => done(null));
    (instance as unknown as App).put('/sessions/:sessionId/devices/:deviceId/files/content', {
      schema: { tags, operationId: 'uploadDeviceFile', summary: 'Write a file on the device, as adb push (or AFC on an iPhone) does, replacing one of the same name', description: byApp, security: BEARER, headers: OrganizationHeader, params: DeviceParams, querystring: PhonePathQuery, body: { content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } }, response: responses({ 204: Type.Null() }, [400, ...errors]) },
    }, async (req, reply) => {
      try {
        await control.writeFile(scopeOf(req), target(req), req.query.path, req.raw, req.query.app);
      } catch (error) {
        drain(req);
        throw error;
      }
      return reply.code(204).send();
    });
  });

  app.post('/sessions/:sessionId/devices/:deviceId/recording', {
    schema: { tags, operationId: 'startDeviceRecording', summary: 'Start recording the device\'s screen to an H.264 MP4 (Android: screenrecord; iPhone: WebDriverAgent\'s frames encoded by ffmpeg)', description: '409 recording_running while one runs; recording_unsupported when the lab cannot record this phone (an iPhone with no ffmpeg on the lab\'s machine).', security: BEARER, headers: OrganizationHeader, params: DeviceParams, response: responses({ 201: Recording }, errors) },
  }, async (req, reply) => {
    const { startedAt, timeLimitSeconds } = await control.startRecording(scopeOf(req), target(req));
    return reply.code(201).send({ startedAt: startedAt.toISOString(), timeLimitSeconds });
  });

  app.post('/sessions/:sessionId/devices/:deviceId/recording/stop', {
    schema: { tags, operationId: 'stopDeviceRecording', summary: 'Stop the recording and download it as an MP4', description: '409 not_recording when none runs.', security: BEARER, headers: OrganizationHeader, params: DeviceParams, response: responses({ 200: served(['video/mp4'], 'The bytes, as video/mp4.') }, errors) },
  }, async (req, reply) => reply.type('video/mp4').header('content-disposition', 'attachment; filename="recording.mp4"').send(await control.stopRecording(scopeOf(req), target(req))));

  const shells = new WeakMap<FastifyRequest, ReturnType<DeviceControl['shell']>>();
  const ShellQuery = Type.Object({ ...SOCKET_QUERY, cols: Side('Columns', 80), rows: Side('Rows', 24) });
  app.route({
    method: 'GET',
    url: '/sessions/:sessionId/devices/:deviceId/shell',
    config: { tokenInQuery: true },
    schema: {
      tags,
      operationId: 'deviceShell',
      summary: 'An interactive shell on the device over a WebSocket (Android: adb shell with a PTY)',
      description: 'Upgrade to a WebSocket. Keystrokes go as binary messages, the output comes as binary messages; a text ' +
        'message {"type":"resize","cols","rows"} resizes the terminal. Closes with 1000 when the shell exits, 4001 when the ' +
        'device is released, 4002 when it goes offline. 409 shell_unsupported on an iPhone, which runs no shell for a computer.',
      security: BEARER,
      headers: OrganizationHeader,
      querystring: ShellQuery,
      params: DeviceParams,
      response: responses({ 101: Type.Null({ description: 'Switching to the WebSocket protocol' }), 426: ErrorBody }, errors),
    },
    preHandler: async (req) => {
      shells.set(req, control.shell(scopeOf(req, req.query.org), target(req)));
    },
    handler: (_req, reply) =>
      reply.code(426).header('upgrade', 'websocket').send({ error: { code: 'websocket_required', message: 'Open this URL as a WebSocket.' } }),
    wsHandler: (socket, req) => {
      const { cols = 80, rows = 24 } = req.query as { cols?: number; rows?: number };
      const opened = shells.get(req)!;
      let closed = false;
      const close = (why: keyof typeof SHELL_CLOSE) => {
        if (closed) return;
        closed = true;
        clearInterval(check);
        if (socket.readyState === socket.OPEN) socket.close(...SHELL_CLOSE[why]);
      };
      // The shell ends with the allocation: the next user's phone is not this caller's.
      const check = setInterval(() => {
        const why = opened.ended();
        if (why) close(why);
      }, 500);
      // Keystrokes that arrive while the phone's shell opens are kept, in order.
      const early: Buffer[] = [];
      let shell: Awaited<ReturnType<typeof opened.open>> | undefined;
      socket.on('message', (data: Buffer, binary: boolean) => {
        if (binary) {
          if (shell) shell.write(data);
          else early.push(data);
          return;
        }
        const size = resizeOf(data.toString());
        if (typeof size !== 'string') shell?.resize(size);
        else if (socket.bufferedAmount < MAX_CONTROL_BACKLOG) socket.send(JSON.stringify({ type: 'error', message: size }));
      });
      socket.on('close', () => {
        closed = true;
        clearInterval(check);
        shell?.close();
      });
      opened.open({ cols, rows }, {
        output: (data) => socket.readyState === socket.OPEN && socket.send(data, { binary: true }),
        exit: (status) => close(status === null ? 'lost' : 'exited'),
      }).then((s) => {
        shell = s;
        if (closed) return s.close();
        for (const data of early.splice(0)) s.write(data);
      }, (error: Error) => {
        if (socket.readyState === socket.OPEN) socket.send(JSON.stringify({ type: 'error', message: error.message }));
        close('lost');
      });
    },
  });
}
