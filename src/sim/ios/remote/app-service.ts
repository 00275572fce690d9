import type { Duplex } from 'node:stream';
import { RemoteXpcConnection } from '../../../protocols/apple/remote-xpc.js';
import { isXpcDictionary, xpcNumber, XpcInt64, XpcUuid, type XpcDictionary, type XpcMessage, type XpcValue } from '../../../protocols/apple/xpc.js';
import { NSError } from '../nskeyed.js';
import type { TestManager } from '../test-manager.js';

/** The features com.apple.coredevice.appservice of this phone answers (RSD lists them in its Properties). */
export const APP_SERVICE_FEATURES = [
  'com.apple.coredevice.feature.launchapplication',
  'com.apple.coredevice.feature.listprocesses',
  'com.apple.coredevice.feature.sendsignaltoprocess',
];

/** What CoreDevice's app service needs of its phone. */
export interface AppServiceHost {
  testManager: TestManager;
  /** A stdio socket the host opened through com.apple.coredevice.openstdiosocket, by its UUID. */
  stdio(uuid: string): Duplex | undefined;
  log(process: string, message: string): void;
}

/** CoreDeviceError's codes, as devicectl prints them. */
const CORE_DEVICE_ERROR = { LAUNCH_FAILED: 10002, UNSUPPORTED_FEATURE: 1, INVALID_INPUT: 2 } as const;

/** An NSError as CoreDevice serializes one into XPC. */
function xpcError(domain: string, code: number, description: string, extra: XpcDictionary = {}): XpcDictionary {
  return { code: new XpcInt64(code), domain, userInfo: { NSLocalizedDescription: description, ...extra } };
}

const field = (value: XpcValue | undefined, key: string): XpcValue | undefined => (isXpcDictionary(value) ? value[key] : undefined);

/**
 * com.apple.coredevice.appservice, RemoteXPC: each request on the ROOT_CHANNEL is a CoreDevice invocation
 * (CoreDevice.featureIdentifier, CoreDevice.input, ...) and is answered on the REPLY_CHANNEL with the request's id:
 * {CoreDevice.output} when it did what was asked, {CoreDevice.error: {code, domain, userInfo}} when not. Launching
 * goes through the phone's own process table (TestManager), so the phone decides, as a real one, whether the app is
 * there and may run, and whether a WebDriverAgent runner waits for testmanagerd or serves at once.
 */
export function serveAppService(socket: Duplex, host: AppServiceHost): void {
  new RemoteXpcConnection(socket, (message, connection) => {
    let output: { output: XpcDictionary } | { error: XpcDictionary };
    try {
      output = invoke(message, host);
    } catch (error) {
      output = { error: xpcError('com.apple.dt.CoreDeviceError', CORE_DEVICE_ERROR.INVALID_INPUT, `The request could not be read: ${(error as Error).message}`) };
    }
    reply(connection, message, 'output' in output ? { 'CoreDevice.output': output.output } : { 'CoreDevice.error': output.error });
  });
}

function reply(connection: RemoteXpcConnection, request: XpcMessage, body: XpcDictionary): void {
  connection.reply(request, body);
}

function invoke(message: XpcMessage, host: AppServiceHost): { output: XpcDictionary } | { error: XpcDictionary } {
  const body = message.body;
  const feature = field(body, 'CoreDevice.featureIdentifier');
  const input = field(body, 'CoreDevice.input');
  switch (feature) {
    case 'com.apple.coredevice.feature.launchapplication':
      return launch(input, host);
    case 'com.apple.coredevice.feature.listprocesses':
      return { output: { processTokens: processes(host) } };
    case 'com.apple.coredevice.feature.sendsignaltoprocess': {
      const pid = xpcNumber(field(field(input, 'process'), 'processIdentifier'));
      const signal = xpcNumber(field(input, 'signal'));
      if (pid === undefined || signal === undefined) {
        return { error: xpcError('com.apple.dt.CoreDeviceError', CORE_DEVICE_ERROR.INVALID_INPUT, 'The request names no process or no signal.') };
      }
      const token = processes(host).find((p) => xpcNumber(p.processIdentifier) === pid);
      // SIGKILL, SIGTERM and the like end it; the phone's own daemons are not the host's to signal.
      if (!token || !host.testManager.kill(pid)) {
        return { error: xpcError('NSPOSIXErrorDomain', 3, token ? 'Operation not permitted' : 'No such process') };
      }
      host.log('appservice', `sent signal ${signal} to pid ${pid}`);
      return { output: { process: token, signal: new XpcInt64(signal) } };
    }
    default:
      return {
        error: xpcError('com.apple.dt.CoreDeviceError', CORE_DEVICE_ERROR.UNSUPPORTED_FEATURE, `The feature ${String(feature)} is not supported by this device.`),
      };
  }
}

function launch(input: XpcValue | undefined, host: AppServiceHost): { output: XpcDictionary } | { error: XpcDictionary } {
  const bundleId = field(field(field(input, 'applicationSpecifier'), 'bundleIdentifier'), '_0');
  if (typeof bundleId !== 'string') return { error: xpcError('com.apple.dt.CoreDeviceError', CORE_DEVICE_ERROR.INVALID_INPUT, 'The request names no application.') };
  const options = field(input, 'options');
  const env = field(options, 'environmentVariables');
  const environment: Record<string, unknown> = {};
  if (isXpcDictionary(env)) for (const [key, value] of Object.entries(env)) if (typeof value === 'string') environment[key] = value;
  const terminateExisting = field(options, 'terminateExisting') === true;
  const pid = host.testManager.launchApp(bundleId, environment, terminateExisting);
  if (pid instanceof NSError) {
    return {
      error: xpcError('com.apple.dt.CoreDeviceError', CORE_DEVICE_ERROR.LAUNCH_FAILED, 'The application failed to launch.', {
        BundleIdentifier: bundleId,
        NSUnderlyingError: xpcError(pid.domain, pid.code, pid.description),
      }),
    };
  }
  const stdout = field(field(input, 'standardIOIdentifiers'), 'standardOutput');
  const stdio = stdout instanceof XpcUuid ? host.stdio(stdout.value) : undefined;
  if (stdio) host.testManager.attachOutput(pid, (text) => void (stdio.writable && stdio.write(text)));
  const token = processes(host).find((p) => xpcNumber(p.processIdentifier) === pid)!;
  return { output: { processToken: token } };
}

/** Process tokens as CoreDevice lists them: pid and executable URL. */
function processes(host: AppServiceHost): XpcDictionary[] {
  return host.testManager.processTable().map(({ pid, path }) => ({
    processIdentifier: new XpcInt64(pid),
    executableURL: { relative: `file://${path}` },
  }));
}
