import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { WebSocket } from 'ws';
import { ErrorBody, List } from '../../../../shared/api/common.js';
import { ActionResult, DeviceActionBody, DeviceInfo, LogLine, UiElement } from '../../../../shared/api/devices.js';
import { InstallBody, InstallResult } from '../../../../shared/api/files.js';
import type { DeviceControl } from '../../services/device-control.js';
import { HEARTBEAT_MS } from '../../events/sse.js';
import { DEFAULT_MAX_SIZE, type FeedEnd, type Frame, type Viewer } from '../../services/live-screen.js';
import { VIDEO_HEADER_BYTES, writeVideoHeader, type ScreenHello } from '../../../../shared/api/live-screen.js';
import { BEARER, OrganizationHeader, responses, scopeOf, SOCKET_QUERY, type App } from '../http.js';
import { eventStream, served } from '../media.js';
import { list } from '../presenters/common.js';
import { DeviceParams } from './devices.js';

/**
 * A viewer whose socket still holds more than this much unsent data skips frames until it drains: the newest frame
 * wins, and nothing queues up behind a slow connection.
 */
const MAX_BUFFERED_BYTES = 64 * 1024;

/** How a live screen closes, so that a client can tell a released phone from a failure without parsing text. */
const CLOSE: Record<FeedEnd, [code: number, reason: string]> = {
  device_released: [4001, 'device released'],
  device_offline: [4002, 'device offline'],
  capture_failed: [1011, 'screen capture failed'],
  shutdown: [1001, 'Benchtop is shutting down'],
};

const ScreenQuery = Type.Object({
  ...SOCKET_QUERY,
  maxSize: Type.Optional(Type.Integer({ minimum: 64, maximum: 4096, description: `The longest side, in pixels, the viewer will show; frames are captured at the largest size any viewer of the phone asks for (${DEFAULT_MAX_SIZE} when none says), never above the phone's own.` })),
  codecs: Type.Optional(Type.String({ maxLength: 100, pattern: '^[a-z0-9]+(,[a-z0-9]+)*$', description: 'What the viewer decodes, comma-separated: with h264 (WebCodecs), an Android phone\'s feed is H.264 from its own encoder (screenrecord) where it starts. JPEG and PNG are always taken.' })),
});

const SEND_BINARY = { binary: true, compress: false } as const;

/**
 * Each frame's hello and message, written once for all its viewers rather than once per viewer and frame: at 60
 * frames/s to four viewers that was 240 JSON.stringify calls a second for the same few strings. The last frame's are
 * kept, not a map of every frame: every viewer is sent a frame before the next one comes, and a feed's frames share
 * their hello until the screen turns or the source changes, so the hello is compared by what it says. (A WeakMap
 * entry for each frame cost the collector more than the strings did.)
 */
let lastHello: { frame: Frame; hello: string } | undefined;
function helloOf(frame: Frame): string {
  const last = lastHello;
  if (last && (last.frame === frame || sameHello(last.frame, frame))) return last.hello;
  const screen = frame.screen ?? frame;
  const message: ScreenHello = {
    type: 'hello',
    width: screen.width,
    height: screen.height,
    frameWidth: frame.width,
    frameHeight: frame.height,
    format: frame.format,
    source: frame.source,
    codec: frame.video?.codec,
    reason: frame.reason,
  };
  lastHello = { frame, hello: JSON.stringify(message) };
  return lastHello.hello;
}

/** Whether two frames' hellos say the same: every field helloOf writes. */
function sameHello(a: Frame, b: Frame): boolean {
  const as = a.screen ?? a;
  const bs = b.screen ?? b;
  return as.width === bs.width && as.height === bs.height && a.width === b.width && a.height === b.height && a.format === b.format
    && a.source === b.source && a.video?.codec === b.video?.codec && a.reason === b.reason;
}

/** An H.264 access unit behind its header (see src/shared/api/live-screen.ts); a picture as it is. */
let lastMessage: { frame: Frame; message: Buffer } | undefined;
function messageOf(frame: Frame): Buffer {
  if (!frame.video) return frame.data;
  if (lastMessage?.frame === frame) return lastMessage.message;
  const message = Buffer.allocUnsafe(VIDEO_HEADER_BYTES + frame.data.length);
  writeVideoHeader(message, frame.video.keyframe, frame.video.timestamp);
  frame.data.copy(message, VIDEO_HEADER_BYTES);
  lastMessage = { frame, message };
  return message;
}

/**
 * A viewer over a WebSocket: a hello with the screen's size, format and source, then one binary message per frame;
 * a new hello whenever those change (rotation, or minicap giving way to screencap).
 */
function socketViewer(socket: WebSocket, options: { maxSize?: number; video: boolean }): Viewer {
  let hello = '';
  return {
    ...options,
    send(frames) {
      // Above this, the socket is still sending earlier frames: these are dropped rather than queued behind them.
      if (socket.readyState !== socket.OPEN || socket.bufferedAmount > MAX_BUFFERED_BYTES) return false;
      for (const frame of frames) {
        const next = helloOf(frame);
        if (next !== hello) {
          socket.send(next);
          hello = next;
        }
        // The feed's own buffer, to every viewer: ws frames it without copying (no mask, no compression server-side).
        socket.send(messageOf(frame), SEND_BINARY);
      }
      return true;
    },
    end(why) {
      socket.close(...CLOSE[why]);
    },
  };
}

/** Driving an in_use phone of the caller's session: what the GUI's live screen and the assistant use. */
export function deviceControlRoutes(app: App, control: DeviceControl, options: { rebootTimeoutMs: number }): void {
  const tags = ['Extensions'];
  const errors = [401, 403, 404, 409] as const;

  app.get('/sessions/:sessionId/devices/:deviceId/screenshot', {
    schema: { tags, operationId: 'deviceScreenshot', summary: 'The device\'s screen as PNG, or as the live screen\'s latest JPEG while one runs', security: BEARER, headers: OrganizationHeader, params: DeviceParams, response: responses({ 200: served(['image/png', 'image/jpeg'], 'PNG; JPEG (the live screen\'s latest frame, no capture needed) while someone watches the live screen') }, errors) },
  }, async (req, reply) => {
    const frame = await control.screenshot(scopeOf(req), { sessionId: req.params.sessionId, serial: req.params.deviceId });
    return reply.type(`image/${frame.format}`).header('cache-control', 'no-store').send(frame.data);
  });

  app.get('/sessions/:sessionId/devices/:deviceId/elements', {
    schema: { tags, operationId: 'deviceElements', summary: 'The UI elements on screen, flattened from the hierarchy', security: BEARER, headers: OrganizationHeader, params: DeviceParams, response: responses({ 200: List(UiElement) }, errors) },
  }, async (req) => list(await control.elements(scopeOf(req), { sessionId: req.params.sessionId, serial: req.params.deviceId })));

  app.get('/sessions/:sessionId/devices/:deviceId/info', {
    schema: { tags, operationId: 'deviceInfo', summary: 'The device\'s model, OS, ABI, screen, battery and network, read from it now', security: BEARER, headers: OrganizationHeader, params: DeviceParams, response: responses({ 200: DeviceInfo }, errors) },
  }, (req) => control.info(scopeOf(req), { sessionId: req.params.sessionId, serial: req.params.deviceId }));

  app.post('/sessions/:sessionId/devices/:deviceId/actions', {
    schema: { tags, operationId: 'deviceAction', summary: 'Tap, swipe, type, press a button, launch or stop an app, open a URL, rotate', security: BEARER, headers: OrganizationHeader, params: DeviceParams, body: DeviceActionBody, response: responses({ 200: ActionResult }, [400, ...errors]) },
  }, (req) => control.act(scopeOf(req), { sessionId: req.params.sessionId, serial: req.params.deviceId }, req.body));

  app.post('/sessions/:sessionId/devices/:deviceId/install', {
    schema: { tags, operationId: 'installApp', summary: 'Install a stored file (a ready app of your organization) on an in_use device', description: 'file is a file id or file:<fileId>. An unknown or expired file is 404 file_not_found; an app of the other platform is 400 wrong_platform; a file not ready yet is 409 file_not_ready. The app is uninstalled when the device is released.', security: BEARER, headers: OrganizationHeader, params: DeviceParams, body: InstallBody, response: responses({ 200: InstallResult }, [400, ...errors]) },
  }, (req) => control.install(scopeOf(req), { sessionId: req.params.sessionId, serial: req.params.deviceId }, req.body));

  app.post('/sessions/:sessionId/devices/:deviceId/reboot', {
    schema: { tags, operationId: 'deviceReboot', summary: 'Restart the device, answering once it is back in_use', description: `The allocation holds on while the phone restarts (offline, then in_use again), as across an unplugged cable; the answer comes once the phone is back, awake and on its home screen. A phone not back within ${options.rebootTimeoutMs / 1000} s is 409 device_error; one away longer than the device grace period is released as device_lost (409 device_released).`, security: BEARER, headers: OrganizationHeader, params: DeviceParams, response: responses({ 200: ActionResult }, errors) },
  }, async (req) => {
    await control.reboot(scopeOf(req), { sessionId: req.params.sessionId, serial: req.params.deviceId }, { timeoutMs: options.rebootTimeoutMs });
    return { ok: true };
  });

  const screens = new WeakMap<FastifyRequest, ReturnType<DeviceControl['liveScreen']>>();

  // wsHandler rather than `websocket: true`, which would hide the route from the OpenAPI document; a plain GET
  // gets the HTTP handler, which explains the upgrade.
  app.route({
    method: 'GET',
    url: '/sessions/:sessionId/devices/:deviceId/screen',
    config: { tokenInQuery: true },
    schema: {
      tags,
      operationId: 'deviceScreen',
      summary: 'Live frames of the device\'s screen over a WebSocket',
      description: 'Upgrade to a WebSocket. The first message is text, {"type":"hello","width","height","frameWidth","frameHeight",' +
        '"format":"jpeg"|"png"|"h264","source":"screenrecord"|"minicap"|"mjpeg"|"screencap","codec"?,"reason"?}: width and height are the screen in the phone\'s pixels (what ' +
        'actions take), frameWidth and frameHeight the frames\' own size (smaller when scaled to maxSize); each later binary ' +
        'message is one frame in that format (JPEG from minicap, which the phone pushes as its screen changes; PNG from ' +
        'screencap, the fallback). With codecs=h264, an Android phone\'s frames are H.264 access units from its own encoder (screenrecord), ' +
        'codec the avc1 string for WebCodecs: each binary message is 5 header bytes (byte 0 bit 0: keyframe; bytes 1-4: ms, big-endian) and one ' +
        'access unit in Annex B; the first a viewer gets, and the first after any it missed, is a keyframe with its SPS and PPS. reason says why ' +
        'another source was used. A new hello precedes a frame whose size, format or source differs. A viewer that falls behind skips frames. Closes with 4001 when the ' +
        'device is released, 4002 when it goes offline, 1011 when capture fails. A refusal is an HTTP error before the upgrade: 400 invalid_request for a bad maxSize or codecs.',
      security: BEARER,
      headers: OrganizationHeader,
      querystring: ScreenQuery,
      params: DeviceParams,
      response: responses({ 101: Type.Null({ description: 'Switching to the WebSocket protocol' }), 426: ErrorBody }, [400, ...errors]),
    },
    // Everything that can refuse a viewer runs before the upgrade, so that a refusal is an ordinary HTTP error.
    preHandler: async (req) => {
      screens.set(req, control.liveScreen(scopeOf(req, req.query.org), { sessionId: req.params.sessionId, serial: req.params.deviceId }));
    },
    handler: (_req, reply) =>
      reply.code(426).header('upgrade', 'websocket').send({ error: { code: 'websocket_required', message: 'Open this URL as a WebSocket.' } }),
    wsHandler: (socket, req) => {
      const query = req.query as { maxSize?: number; codecs?: string };
      const video = (query.codecs ?? '').split(',').includes('h264');
      const leave = screens.get(req)!.watch(socketViewer(socket, { maxSize: query.maxSize, video }));
      socket.on('close', leave);
    },
  });

  const LogsQuery = Type.Object(SOCKET_QUERY);
  const LogStream = eventStream(
    'Server-Sent Events: one `log` event per line, its data a LogLine; a comment heartbeat every 15 s; one `end` event before the stream closes.',
    {
      log: LogLine,
      end: Type.Object({ reason: Type.Union([Type.Literal('device_released'), Type.Literal('device_offline'), Type.Literal('device_error'), Type.Literal('shutdown')]) }),
    },
  );
  /** Open log streams: the server's close waits for every response, so shutdown ends them first. */
  const logStreams = new Set<(why: string) => void>();
  app.addHook('preClose', async () => {
    for (const end of [...logStreams]) end('shutdown');
  });

  app.get('/sessions/:sessionId/devices/:deviceId/logs', {
    config: { tokenInQuery: true },
    schema: {
      tags,
      operationId: 'deviceLogs',
      summary: 'The device\'s log (logcat), live, as Server-Sent Events',
      description: 'From the start of the allocation (the log is cleared when the phone is prepared), then each line as the ' +
        'phone logs it, while the allocation is in_use. EventSource may pass the bearer as ?token=.',
      security: BEARER,
      headers: OrganizationHeader,
      querystring: LogsQuery,
      params: DeviceParams,
      response: responses({ 200: LogStream }, errors),
    },
  }, (req, reply) => {
    // Everything that can refuse runs before the stream starts, so that a refusal is an ordinary HTTP error.
    const logs = control.logs(scopeOf(req, req.query.org), { sessionId: req.params.sessionId, serial: req.params.deviceId });
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive', 'x-accel-buffering': 'no' });
    res.flushHeaders();
    const stopping = new AbortController();
    let reason: string | undefined;
    const end = (why: string) => {
      reason ??= why;
      stopping.abort();
    };
    res.once('close', () => stopping.abort());
    logStreams.add(end);
    const heartbeat = setInterval(() => res.write(': heartbeat\n\n'), HEARTBEAT_MS);
    // The stream ends with the allocation: the next user's log is not this caller's.
    const check = setInterval(() => {
      const why = logs.ended();
      if (why) end(why);
    }, 500);
    void (async () => {
      try {
        for await (const line of logs.lines(stopping.signal)) {
          if (stopping.signal.aborted) break;
          res.write(`event: log\ndata: ${JSON.stringify(line)}\n\n`);
        }
        // logcat itself ended: the phone went away or restarted.
        if (!stopping.signal.aborted) end('device_error');
      } catch {
        if (!stopping.signal.aborted) end('device_error');
      } finally {
        logStreams.delete(end);
        clearInterval(heartbeat);
        clearInterval(check);
        if (!res.writableEnded) {
          if (reason) res.write(`event: end\ndata: ${JSON.stringify({ reason })}\n\n`);
          res.end();
        }
      }
    })();
  });
}
