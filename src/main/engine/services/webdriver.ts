import { buildTag, tagPath } from '../../../shared/test-result-tags.js';
import { randomBytes, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { capabilitySets, CapabilityError, readCapabilities, RETAIN_ON_FAILURE, whyNothingMatches, type NewSessionRequest, type VideoChoice } from '../domain/webdriver-capabilities.js';
import { CommandError, commandLabel, elementOf, endsScreenRecorders, foundElements, isFind, LAB_SCRIPT, readInspected, type Command } from '../domain/webdriver-commands.js';
import type { BlobStore } from '../blobs/blob-store.js';
import { AppRefError, readAppRef } from '../domain/app-refs.js';
import { answeredCapabilities } from '../domain/webdriver-answer.js';
import type { FileRow } from '../store/files.js';
import { notFound } from '../domain/errors.js';
import { mp4Seconds } from '../domain/mp4-duration.js';
import { withTimeout } from '../domain/time.js';
import { freePort, type AppiumPlatform, type AppiumReply, type AppiumServer } from '../fleet/appium/appium-server.js';
import type { PrivateAdbServer } from '../fleet/appium/private-adb.js';
import type { PhoneSource } from '../fleet/types.js';
import type { DeviceAllocationRow } from '../store/devices.js';
import type { Stores } from '../store/index.js';
import { requireRole } from './auth.js';
import type { DeviceControl, DeviceTarget } from './device-control.js';
import type { DeviceAllocator } from './devices.js';
import type { RemoteConnect } from './remote-connect.js';
import type { Sessions } from './sessions.js';
import type { TestResults } from './test-results.js';
import { AppUnavailable, type WebDriverApps } from './webdriver-apps.js';
import type { Clock, Scope } from './scope.js';

/** A W3C WebDriver error: its name (the `error` of the answer) says the HTTP status. */
export class WebDriverError extends Error {
  constructor(
    readonly w3c: string,
    message: string,
  ) {
    super(message);
  }
}

/** A queued request whose client went away: its allocation waits for the same client's retry, briefly. */
interface Abandoned {
  allocationId: string;
  labSessionId: string;
  createdSession: boolean;
  organizationId: string;
  timer: NodeJS.Timeout;
}

/** The same request again: the same key (or member), the same organization and the same capabilities. */
function retryKeyOf(scope: Scope, body: unknown): string {
  const canonical = (value: unknown): unknown =>
    Array.isArray(value) ? value.map(canonical) : value && typeof value === 'object' ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, canonical(v)])) : value;
  return JSON.stringify([scope.organization.id, scope.caller.key?.id ?? scope.caller.user.id, canonical((body as { capabilities?: unknown })?.capabilities)]);
}

const invalidSession = () => new WebDriverError('invalid session id', 'No running session of this lab has that id (it ended, or it never existed).');

export interface WebDriverOptions {
  /** Appium's private adb server; undefined when this machine has no adb (Android sessions are then refused). */
  privateAdb: PrivateAdbServer | undefined;
  /** How often a queued request looks at its allocation. */
  pollMs: number;
  /** How long the place of a request whose client went away is kept for that client's retry. */
  retryWindowMs: number;
  /** Where the ports the lab gives Appium come from (free ones of the OS's): a test takes them to make the race happen. */
  freePort?: () => Promise<number>;
  /** The lab owner's choice for runs that do not say (lab settings, webDriverVideo); a video if absent. */
  defaultVideo?: () => VideoChoice;
  /** Free space on the lab's disk, and the least a run's video is recorded with (BENCHTOP_VIDEO_MIN_FREE_MB). */
  disk?: { freeBytes: () => number | null; minFreeForVideoBytes: number };
  log: (message: string) => void;
}

/** One command as the run's log keeps it: what was asked, how it went and how long it took. */
export interface CommandEntry {
  at: number;
  method: string;
  path: string;
  status: number;
  ms: number;
  error?: string;
  /** What it was, in words: a script's name, a find's locator, how the session ended. */
  label?: string;
}

/** What a command sends on to Appium: text the lab has read, a stream it passes on, or nothing. */
export type CommandBody = { text: string } | { stream: Readable; length: number | undefined } | undefined;
/** A command body over this (or of no stated length) is large: few of those go on to Appium at once. */
export const LARGE_BODY = 1024 * 1024;
const LARGE_PER_SESSION = 2;
const LARGE_PER_CALLER = 4;

/** How many sets of ports a session start tries when one it was given is taken before Appium's adb binds it. */
const PORT_ATTEMPTS = 3;
/** What Appium answers then: the UiAutomator2 driver's check of its port, or adb's failed forward. */
const PORT_TAKEN = /local port #\d+ is busy|cannot bind listener|Address already in use/;

/** The most a run keeps in memory of each log: a week-long session must not grow the engine without end. */
const MAX_COMMANDS = 20_000;
/** The most elements a run remembers by their locator; the oldest is forgotten first. */
const MAX_ELEMENTS = 2_000;
const MAX_LOG_BYTES = 8 * 1024 * 1024;
/** Appium prints a few hundred lines while it creates a session: this many cover several created at once. */
const MAX_STARTING_LINES = 20_000;
/** The longest a recorder takes to write its first picture once asked: how far a video's start is moved to meet its end. */
const MAX_RECORDER_LAG_MS = 3000;
/** Ending a session touches the phone (a screenshot, the recording, Appium's own cleanup): bounded, as cleanup is. */
const END_STEP_TIMEOUT_MS = 30_000;

/** A bounded text log: the newest lines are the ones kept once it is full. */
class TextLog {
  private lines: string[] = [];
  private bytes = 0;
  dropped = 0;

  add(line: string): void {
    this.lines.push(line);
    this.bytes += line.length + 1;
    while (this.bytes > MAX_LOG_BYTES && this.lines.length > 1) {
      this.bytes -= this.lines.shift()!.length + 1;
      this.dropped++;
    }
  }

  text(): string {
    return (this.dropped > 0 ? `[${this.dropped} earlier lines dropped]\n` : '') + this.lines.join('\n') + '\n';
  }
}

interface Run {
  id: string;
  /** The WebDriver session id: the client's secret, which authorizes every command after the first. */
  secret: string;
  appiumId: string;
  scope: Scope;
  target: Required<DeviceTarget>;
  allocationId: string;
  platform: 'android' | 'ios';
  deviceName: string;
  /** Where Appium's private adb reaches an Android phone (its bridge). */
  adbAddress?: string;
  /** Ports the lab gave Appium for this run. */
  ports: number[];
  /** The lab session was made for this run (no benchtop:options.sessionId): it ends with the run. */
  createdSession: boolean;
  testResultId: string;
  capabilities: Record<string, unknown>;
  startedAt: number;
  newCommandTimeoutMs: number;
  timer?: NodeJS.Timeout;
  inFlight: number;
  /** Large command bodies of this run on their way to Appium. */
  largeBodies: number;
  lastCommandAt: number;
  commands: CommandEntry[];
  /** The locator each element was found by (oldest first): a command on an element is logged by it, not by its id. */
  elements: Map<string, string>;
  appiumLog: TextLog;
  phoneLog: TextLog;
  stopPhoneLog: AbortController;
  recording?: Promise<unknown>;
  /** The client's `benchtop:options.video`: false, and the run keeps no video; "retain-on-failure", none if it passed. */
  video: VideoChoice;
  /** The video was the lab's choice (its settings), the client having said nothing. */
  videoByLab: boolean;
  /** No video because the lab's disk was nearly full when the run began. */
  videoLowDisk?: boolean;
  /** When the video's first picture was taken: where a command's place in the video is counted from. */
  recordingStartedAt?: number;
  /** What the client said of its run (`benchtop: status`). */
  verdict?: { status: 'passed' | 'failed'; reason?: string };
  ending?: Promise<void>;
}

/** A running WebDriver session, as its organization sees it (never its id's secret in a list shown to others). */
export interface WebDriverRunView {
  id: string;
  sessionId: string;
  serial: string;
  deviceName: string;
  platform: 'android' | 'ios';
  testResultId: string;
  createdBy: string;
  startedAt: number;
  lastCommandAt: number;
  newCommandTimeoutMs: number;
  commands: CommandEntry[];
}

/** How each end of a run is told in the test result and to the allocation. */
type EndReason = 'deleted' | 'taken_over' | 'new_command_timeout' | 'released' | 'appium_died' | 'appium_session_lost' | 'start_failed' | 'engine_stopped' | 'engine_restarted';

/**
 * WebDriver sessions of the whole lab (/wd/hub): each holds its phone through an ordinary allocation, is driven by
 * real Appium behind the lab, and is kept as a test result of its organization with its command log, Appium's log,
 * the phone's log, a video and a last screenshot. It ends only by DELETE of the session, the client's
 * newCommandTimeout, a release of its phone (the holder, the lab owner, idle release, unplugging) or a failed start.
 */
export class WebDriverRuns {
  private readonly runs = new Map<string, Run>();
  private readonly byAllocation = new Map<string, Run>();
  /** Lines Appium printed that name a session, kept by the short id Appium prints in its log prefixes. */
  private readonly logPrefixes = new Map<string, Run>();
  private stopped = false;
  /** Sessions being created, and Appium's lines meanwhile: a session's first lines come before its id is known. */
  private starting = 0;
  private recentLines: string[] = [];
  /** Large command bodies on their way to Appium, by caller (API key, or member): one caller's sessions share a bound. */
  private readonly largeBodies = new Map<string, number>();
  /** Queued requests whose clients went away, by what a retry of each would be: the oldest first. */
  private readonly abandoned = new Map<string, Abandoned[]>();
  /** Requests waiting for a phone now, by what a retry of each would be. */
  private readonly waiting = new Map<string, number>();

  constructor(
    private readonly stores: Pick<Stores, 'webDriverRuns' | 'devices' | 'testResults' | 'sessions'>,
    private readonly parts: {
      sessions: Pick<Sessions, 'createSession' | 'getSession'>;
      allocator: Pick<DeviceAllocator, 'allocate' | 'expire' | 'inventory' | 'freeFor' | 'onReady'>;
      remote: Pick<RemoteConnect, 'openForRun'>;
      control: Pick<DeviceControl, 'screenshot' | 'startRecording' | 'stopRecording' | 'besideRecording' | 'logs'>;
      apps: Pick<WebDriverApps, 'file' | 'pathOf'>;
      activity: { touch(allocationId: string): void };
      testResults: Pick<TestResults, 'createTestResult' | 'getTestResult' | 'updateTestResult' | 'addAsset'>;
      blobs: Pick<BlobStore, 'stage'>;
      phones: Pick<PhoneSource, 'get' | 'driver'>;
      /** Appium for each platform, each started by its platform's first session. */
      appium: Record<AppiumPlatform, AppiumServer>;
    },
    private readonly now: Clock,
    private readonly options: WebDriverOptions,
  ) {
    for (const [platform, appium] of Object.entries(parts.appium) as Array<[AppiumPlatform, AppiumServer]>) {
      appium.on('line', (line) => this.appiumLine(line));
      appium.on('died', () => this.appiumDied(platform));
    }
  }

  // ---- a new session ----

  /**
   * Chooses a phone from the capabilities, waits for it in the lab's queue (FIFO per phone, up to queueTimeout, or
   * until `signal` says the client went away), connects Appium to it and starts Appium's session. Whatever fails after
   * the phone was taken releases it.
   */
  /**
   * A new session for the caller: its phone chosen, queued for, held, Appium's session started on it. `origin` is where
   * the caller reached the lab (http://127.0.0.1:7676, a LAN https URL), for the link to the run's page in the answer.
   */
  async start(scope: Scope, body: unknown, signal: AbortSignal, origin?: string): Promise<{ sessionId: string; capabilities: Record<string, unknown> }> {
    if (this.stopped) throw new WebDriverError('session not created', 'The lab is stopping.');
    try {
      requireRole(scope.role, 'readwrite');
    } catch (error) {
      throw new WebDriverError('session not created', (error as Error).message);
    }
    const request = this.choose(body);
    if (request.platform === 'android' && !this.options.privateAdb) {
      throw new WebDriverError('session not created', 'This machine has no adb for Appium: install Debian\'s adb package (or set ANDROID_HOME).');
    }
    // Appium loads its drivers (seconds) while the phone is allocated.
    const appiumReady = this.parts.appium[request.platform].ensure();
    appiumReady.catch(() => undefined);
    // The apps before the queue: a download holds no phone. A retry finds them stored (or unchanged at their URL).
    const apps = await this.appFiles(scope, request);
    const retryKey = retryKeyOf(scope, body);
    // A retry of a request its client gave up on (a client-side time-out) takes that request's place in the queue.
    const place = await this.placeFor(retryKey);
    const labSessionId = place?.labSessionId ?? this.labSession(scope, request);
    const createdSession = place ? place.createdSession : !request.options.sessionId;
    let held: DeviceAllocationRow;
    const asked = performance.now();
    try {
      let allocationId = place?.allocationId;
      if (!allocationId) {
        try {
          allocationId = this.parts.allocator.allocate(scope, labSessionId, { filters: request.filters, installApps: apps.map((file) => `file:${file.id}`) }).id;
        } catch (error) {
          throw new WebDriverError('session not created', (error as Error).message);
        }
      }
      const parked = { retryKey, labSessionId, createdSession, organizationId: scope.organization.id };
      held = await this.waitForPhone(allocationId, request.options.queueTimeoutMs, signal, parked);
    } catch (error) {
      this.endSession(scope.organization.id, labSessionId, createdSession);
      throw error;
    }
    const phoneMs = performance.now() - asked;
    const target = { sessionId: labSessionId, serial: held.serial! };
    const phone = this.parts.phones.get(held.serial!);
    const testResult = this.parts.testResults.createTestResult(scope, {
      name: request.options.name ?? `WebDriver on ${phone?.name ?? held.serial}`,
      status: 'running',
      sessionId: labSessionId,
      startedAt: new Date(this.now()).toISOString(),
      tags: ['webdriver', request.platform, ...(request.options.build ? [buildTag(request.options.build)] : [])],
      environment: { build: request.options.build ?? null, device: phone?.name ?? null, serial: held.serial, platformVersion: phone?.osVersion ?? null },
      userAgent: 'Benchtop WebDriver',
    });
    const run: Run = {
      id: randomUUID(),
      // 192 bits: the id is the only credential later commands carry.
      secret: randomBytes(24).toString('hex'),
      appiumId: '',
      scope,
      target,
      allocationId: held.id,
      platform: request.platform,
      deviceName: phone?.name ?? held.serial!,
      ports: [],
      createdSession,
      testResultId: testResult.id,
      capabilities: {},
      startedAt: this.now(),
      newCommandTimeoutMs: request.newCommandTimeoutMs,
      video: request.options.video ?? this.options.defaultVideo?.() ?? true,
      videoByLab: request.options.video === undefined,
      inFlight: 0,
      largeBodies: 0,
      lastCommandAt: this.now(),
      commands: [],
      elements: new Map(),
      appiumLog: new TextLog(),
      phoneLog: new TextLog(),
      stopPhoneLog: new AbortController(),
    };
    this.stores.webDriverRuns.insert({ id: run.id, organizationId: scope.organization.id, allocationId: held.id, testResultId: testResult.id, createdBy: scope.caller.user.id, startedAt: run.startedAt });
    this.byAllocation.set(held.id, run);
    // The video covers the whole run, its start on the phone too (the driver's server installed, Appium's session),
    // unless the client turned it off: a phone then encodes nothing, and the result keeps no video.
    // A disk nearly full is kept for the lab's own data: the run goes on without a video, and says why.
    const free = run.video && this.options.disk ? this.options.disk.freeBytes() : null;
    if (free !== null && free < this.options.disk!.minFreeForVideoBytes) {
      run.video = false;
      run.videoLowDisk = true;
      run.appiumLog.add(`[benchtop] no video: the lab's disk has ${Math.floor(free / 1024 ** 2)} MB free, under the ${Math.floor(this.options.disk!.minFreeForVideoBytes / 1024 ** 2)} MB a run's video needs (BENCHTOP_VIDEO_MIN_FREE_MB)`);
    } else if (run.video) this.startVideo(run);
    else run.appiumLog.add(`[benchtop] no video: ${run.videoByLab ? "the lab keeps none of runs that do not ask for one (its settings' webDriverVideo)" : 'the run asked for none (benchtop:options.video false)'}`);
    // The step under way, named in a failure: a bare "read ECONNRESET" does not say which of the parts refused.
    let step = 'connecting the phone';
    try {
      const connecting = performance.now();
      const labCaps = await this.connect(scope, run, request, phone?.osVersion, (now) => (step = now));
      const connectMs = performance.now() - connecting;
      step = 'starting Appium';
      await appiumReady;
      step = "starting Appium's session";
      const started = performance.now();
      this.starting++;
      const appCaps = launchCapabilities(request, apps.at(-1), request.apps.app !== undefined);
      const create = () => this.parts.appium[run.platform].call('POST', '/session', { capabilities: { alwaysMatch: { ...appCaps, ...labCaps }, firstMatch: [{}] } });
      const reply = await (async () => {
        let answer = await create();
        // A port the lab chose can be taken before Appium's adb binds it: the session starts on others.
        for (let attempt = 1; attempt < PORT_ATTEMPTS && answer.status !== 200 && PORT_TAKEN.test(answer.body.toString('utf8')); attempt++) {
          Object.assign(labCaps, await this.ports(run));
          answer = await create();
        }
        return answer;
      })().finally(() => {
        if (--this.starting === 0) setImmediate(() => this.starting === 0 && (this.recentLines = []));
      });
      const answer = parseJson(reply.body) as { value?: { sessionId?: string; capabilities?: Record<string, unknown>; error?: string; message?: string } };
      if (reply.status !== 200 || !answer?.value?.sessionId) {
        throw new WebDriverError('session not created', `Appium could not start the session on ${run.deviceName}: ${answer?.value?.message ?? reply.body.toString('utf8').slice(0, 500)}`);
      }
      run.appiumId = answer.value.sessionId;
      // What Appium printed while it created the session came before the lab knew its id.
      const prefix = run.appiumId.slice(0, 8);
      for (const line of this.recentLines) if (line.includes(prefix)) run.appiumLog.add(line);
      this.logPrefixes.set(prefix, run);
      // Where a session start's time went: the queue and the phone's preparation, Appium's connection, Appium's session.
      run.commands.push({ at: run.startedAt, method: 'POST', path: `/session (phone ${Math.round(phoneMs)} ms, connect ${Math.round(connectMs)} ms, Appium ${Math.round(performance.now() - started)} ms)`, status: 200, ms: Math.round(performance.now() - asked) });
      // The phone as the lab knows it (its serial and name), not the bridge address or ports Appium reached it by.
      run.capabilities = answeredCapabilities(
        { ...answer.value.capabilities, 'appium:udid': held.serial, 'benchtop:session': labSessionId, 'benchtop:device': run.deviceName, 'benchtop:testResult': testResult.id, ...(origin ? { 'benchtop:testResultUrl': `${origin}/test-results/${testResult.id}` } : {}), ...(origin && request.options.build ? { 'benchtop:buildUrl': `${origin}${tagPath(buildTag(request.options.build))}` } : {}) },
        { serial: held.serial!, deviceName: run.deviceName, newCommandTimeoutS: request.newCommandTimeoutMs / 1000, ...(run.adbAddress ? { bridge: run.adbAddress } : {}) },
      );
      if (signal.aborted) throw new WebDriverError('session not created', 'The client went away while its session started.');
      this.runs.set(run.secret, run);
      this.armTimeout(run);
      this.record(run);
      return { sessionId: run.secret, capabilities: run.capabilities };
    } catch (error) {
      const message = error instanceof WebDriverError ? error.message : `The session could not start on ${run.deviceName} (${step}): ${(error as Error).message}`;
      run.commands.push({ at: this.now(), method: 'POST', path: '/session', status: 500, ms: this.now() - run.startedAt, error: message });
      await this.end(run, 'start_failed');
      throw error instanceof WebDriverError ? error : new WebDriverError('session not created', message);
    }
  }

  /** The first capability set (W3C's firstMatch order) that a phone of the lab could take; else why none could. */
  private choose(body: unknown): NewSessionRequest {
    let reason: string | undefined;
    try {
      for (const caps of capabilitySets(body)) {
        const request = readCapabilities(caps);
        const nothing = whyNothingMatches(this.parts.allocator.inventory(), request);
        if (!nothing) return request;
        reason ??= nothing;
      }
    } catch (error) {
      if (error instanceof CapabilityError) throw new WebDriverError(error.w3c, error.message);
      throw error;
    }
    throw new WebDriverError('session not created', reason!);
  }

  private labSession(scope: Scope, request: NewSessionRequest): string {
    const wanted = request.options.sessionId;
    if (!wanted) {
      // Named after the run, so that the Sessions screen says what it is.
      const { id } = this.parts.sessions.createSession(scope);
      this.stores.sessions.rename(id, scope.organization.id, `WebDriver: ${request.options.name ?? request.asked.map((a) => `${a.capability}=${a.value}`).join(' ')}`.slice(0, 100));
      return id;
    }
    try {
      return this.parts.sessions.getSession(scope, wanted).id;
    } catch {
      throw new WebDriverError('invalid argument', `benchtop:options.sessionId ${wanted} is no session of your organization.`);
    }
  }

  /**
   * Until the allocation is in_use; a queue timeout or a failed preparation releases it. A client that goes away
   * leaves its allocation in its place for a while (parked, at once), for its retry to take over.
   */
  private async waitForPhone(allocationId: string, timeoutMs: number, signal: AbortSignal, parked: Omit<Abandoned, 'allocationId' | 'timer'> & { retryKey: string }): Promise<DeviceAllocationRow> {
    const deadline = this.now() + timeoutMs;
    const park = () => this.park(parked.retryKey, { ...parked, allocationId });
    if (signal.aborted) park();
    else signal.addEventListener('abort', park, { once: true });
    this.waiting.set(parked.retryKey, (this.waiting.get(parked.retryKey) ?? 0) + 1);
    try {
      for (;;) {
        if (signal.aborted) throw new WebDriverError('session not created', 'The client went away while it waited for a phone.');
        const row = this.stores.devices.get(allocationId)!;
        if (row.releasedAt !== null) {
          throw new WebDriverError('session not created', `The phone could not be prepared (${row.releaseReason ?? 'released'}).`);
        }
        if (row.status === 'in_use') return row;
        if (this.now() >= deadline || this.stopped) {
          this.parts.allocator.expire(allocationId, 'webdriver_queue_timeout');
          throw new WebDriverError('session not created', `No matching phone was free within ${timeoutMs / 1000} s (benchtop:options.queueTimeout); every match is busy or reserved.`);
        }
        // Looked at again when a phone is ready (an allocation went in_use), else after pollMs (a release, a timeout).
        await new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            stopListening();
            resolve();
          };
          const timer = setTimeout(done, this.options.pollMs);
          const stopListening = this.parts.allocator.onReady(done);
        });
      }
    } finally {
      signal.removeEventListener('abort', park);
      const left = this.waiting.get(parked.retryKey)! - 1;
      if (left === 0) this.waiting.delete(parked.retryKey);
      else this.waiting.set(parked.retryKey, left);
    }
  }

  /**
   * A retry's place: the request it repeats, if its client gave up on it. A client's retry can come the moment it gave
   * up, on a new connection: while an identical request still waits, the lab looks again a moment later, in case that
   * request's closed connection is not seen yet.
   */
  private async placeFor(retryKey: string): Promise<Abandoned | undefined> {
    for (let tries = 0; ; tries++) {
      const place = this.takeAbandoned(retryKey);
      if (place || !this.waiting.has(retryKey) || tries === 2) return place;
      await new Promise((resolve) => setTimeout(resolve, this.options.pollMs));
    }
  }

  /** Keeps an abandoned request's allocation for its client's retry; unclaimed, it is released and its session ends. */
  private park(retryKey: string, entry: Omit<Abandoned, 'timer'>): void {
    const timer = setTimeout(() => {
      const list = this.abandoned.get(retryKey)?.filter((a) => a.allocationId !== entry.allocationId) ?? [];
      if (list.length > 0) this.abandoned.set(retryKey, list);
      else this.abandoned.delete(retryKey);
      this.parts.allocator.expire(entry.allocationId, 'webdriver_client_gone');
      this.endSession(entry.organizationId, entry.labSessionId, entry.createdSession);
    }, this.stopped ? 0 : this.options.retryWindowMs);
    timer.unref();
    this.abandoned.set(retryKey, [...(this.abandoned.get(retryKey) ?? []), { ...entry, timer }]);
  }

  /** The oldest abandoned request a retry would repeat, still unreleased; it is the retry's from now on. */
  private takeAbandoned(retryKey: string): Abandoned | undefined {
    const list = this.abandoned.get(retryKey) ?? [];
    while (list.length > 0) {
      const entry = list.shift()!;
      clearTimeout(entry.timer);
      if (this.stores.devices.get(entry.allocationId)?.releasedAt === null) {
        if (list.length === 0) this.abandoned.delete(retryKey);
        return entry;
      }
    }
    this.abandoned.delete(retryKey);
    return undefined;
  }

  /** The files of the apps a request names (appium:otherApps, then appium:app), stored and ready to install. */
  private async appFiles(scope: Scope, request: NewSessionRequest): Promise<FileRow[]> {
    const named = [...request.apps.otherApps.map((ref, i) => ({ ref, where: `appium:otherApps[${i}]` })), ...(request.apps.app ? [{ ref: request.apps.app, where: 'appium:app' }] : [])];
    const files: FileRow[] = [];
    for (const { ref, where } of named) {
      try {
        files.push(await this.parts.apps.file(scope, ref, request.platform, where));
      } catch (error) {
        if (error instanceof AppUnavailable) throw new WebDriverError('invalid argument', error.message);
        throw error;
      }
    }
    return files;
  }

  /** Opens the phone's remote connection for Appium, and answers the capabilities through which Appium reaches it. */
  private async connect(scope: Scope, run: Run, request: NewSessionRequest, osVersion: string | undefined, step: (now: string) => void): Promise<Record<string, unknown>> {
    if (run.platform === 'android') {
      const adb = this.options.privateAdb!;
      step("starting Appium's adb server");
      const adbPort = await adb.ensure();
      step("opening the phone's adb bridge");
      const { view } = await this.parts.remote.openForRun(scope, run.target, { publicKey: adb.publicKey() });
      step(`adb connect to the phone's bridge at ${view.address}`);
      await adb.connect(view.address);
      step('choosing ports for Appium');
      run.adbAddress = view.address;
      return {
        'appium:udid': view.address,
        'appium:adbPort': adbPort,
        // Named, so that Appium's adb client never starts a server of its own (one no guard would end) when the lab's
        // private one is gone: adb starts a server only for a host it was not told.
        'appium:remoteAdbHost': '127.0.0.1',
        ...(await this.ports(run)),
        'appium:suppressKillServer': true,
        'appium:newCommandTimeout': 0,
      };
    }
    step("opening the iPhone's WebDriverAgent");
    const { view } = await this.parts.remote.openForRun(scope, run.target, {});
    return {
      'appium:udid': run.target.serial,
      'appium:webDriverAgentUrl': view.webDriverAgentUrl,
      // The driver needs the version exactly; the client may have asked for a prefix ("17" for 17.5.1).
      ...(osVersion ? { 'appium:platformVersion': osVersion } : {}),
      'appium:newCommandTimeout': 0,
    };
  }

  /**
   * Ports of the run's own (the UiAutomator2 server's and the MJPEG stream's), so that parallel sessions never collide:
   * free ones from the OS, none that another run holds, and new ones each time (after a start found one taken).
   */
  private async ports(run: Run): Promise<{ 'appium:systemPort': number; 'appium:mjpegServerPort': number }> {
    const held = new Set([...this.byAllocation.values()].flatMap((r) => r.ports));
    const fresh: number[] = [];
    while (fresh.length < 2) {
      const port = await (this.options.freePort ?? freePort)();
      if (!held.has(port) && !fresh.includes(port)) fresh.push(port);
    }
    run.ports = fresh;
    return { 'appium:systemPort': fresh[0]!, 'appium:mjpegServerPort': fresh[1]! };
  }

  /** A lab session made for a run ends with it, unless someone has since put more in it that still runs. */
  private endSession(organizationId: string, sessionId: string, created: boolean): void {
    if (!created || this.stores.devices.ofSessions([sessionId]).some((d) => d.releasedAt === null)) return;
    this.stores.sessions.end(sessionId, organizationId, this.now());
  }

  // ---- commands ----

  /** The running session with this id; credentials of another organization find nothing, as everywhere. */
  private find(secret: string, scope: Scope | undefined): Run {
    const run = this.runs.get(secret);
    if (!run || run.ending || (scope && scope.organization.id !== run.scope.organization.id)) throw invalidSession();
    return run;
  }

  /** Whether a session id names a running session: checked before a command's body is read. */
  exists(secret: string): boolean {
    const run = this.runs.get(secret);
    return run !== undefined && !run.ending;
  }

  /**
   * One command of a session, handed to Appium at the route the lab built from the parsed one (never the path as it
   * came). A body the lab must read (a script, settings, a recording's options) arrives as text and is checked; any
   * other goes on to Appium as a stream, and a large one only while the session and its caller have few in flight.
   */
  async command(secret: string, scope: Scope | undefined, command: Command, body: CommandBody): Promise<AppiumReply> {
    const run = this.find(secret, scope);
    const path = `/${command.segments.join('/')}`;
    let payload: Buffer | undefined;
    // Its own words (a script's name, a find's locator), or else the locator that found the element it acts on.
    const own = body && 'text' in body ? commandLabel(command.template, body.text) : undefined;
    const label = own ?? run.elements.get(elementOf(command) ?? '');
    if (body && 'text' in body && isFind(command.template)) payload = Buffer.from(body.text);
    else if (body && 'text' in body) {
      let read: ReturnType<typeof readInspected>;
      try {
        read = readInspected(command.template, body.text, run.platform);
      } catch (error) {
        if (!(error instanceof CommandError)) throw error;
        this.log(run, { at: this.now(), method: command.method, path, status: 400, ms: 0, error: error.w3c, ...(label ? { label } : {}) });
        throw new WebDriverError(error.w3c, error.message);
      }
      if ('lab' in read) return this.verdict(run, read.lab, label);
      if ('note' in read) return this.noted(run, label);
      if ('details' in read) return this.details(run, label);
      if ('install' in read) return this.install(run, read.install, command.method, path);
      payload = Buffer.from(read.forward);
    }
    const stream = body && 'stream' in body ? body : undefined;
    const large = stream !== undefined && (stream.length === undefined || stream.length > LARGE_BODY);
    const caller = run.scope.caller.key?.id ?? run.scope.caller.user.id;
    if (large) {
      const callers = this.largeBodies.get(caller) ?? 0;
      if (run.largeBodies >= LARGE_PER_SESSION || callers >= LARGE_PER_CALLER) {
        throw new WebDriverError('invalid argument', `A command body over ${LARGE_BODY / 1024 / 1024} MiB (or of no stated length) waits for none: at most ${LARGE_PER_SESSION} go on to Appium at once per session and ${LARGE_PER_CALLER} per caller; send it again when one has finished.`);
      }
      run.largeBodies++;
      this.largeBodies.set(caller, callers + 1);
    }
    run.inFlight++;
    clearTimeout(run.timer);
    this.parts.activity.touch(run.allocationId);
    const at = this.now();
    const started = performance.now();
    const url = `/session/${run.appiumId}${path}`;
    let reply: AppiumReply;
    try {
      const appium = this.parts.appium[run.platform];
      const call = () => (stream && stream.length !== 0 ? appium.stream(command.method, url, stream.stream, stream.length) : appium.call(command.method, url, payload));
      // The run's own video goes on around a suite's own recording, which would end the lab's recorder.
      reply = await (endsScreenRecorders(command.template, run.platform) ? this.parts.control.besideRecording(run.allocationId, call) : call());
    } catch (error) {
      run.inFlight--;
      this.log(run, { at, method: command.method, path, status: 500, ms: Math.round(performance.now() - started), error: (error as Error).message, ...(label ? { label } : {}) });
      if (!this.parts.appium[run.platform].running()) throw new WebDriverError('invalid session id', 'Appium stopped while it ran the command; the session has ended.');
      throw new WebDriverError('unknown error', `Appium did not answer: ${(error as Error).message}`);
    } finally {
      if (large) {
        run.largeBodies--;
        const left = this.largeBodies.get(caller)! - 1;
        if (left === 0) this.largeBodies.delete(caller);
        else this.largeBodies.set(caller, left);
      }
    }
    run.inFlight--;
    run.lastCommandAt = this.now();
    const error = reply.status >= 400 ? w3cErrorOf(reply.body) : undefined;
    if (own && reply.status === 200 && isFind(command.template)) this.remember(run, foundElements(reply.body), own);
    this.log(run, { at, method: command.method, path, status: reply.status, ms: Math.round(performance.now() - started), ...(error ? { error } : {}), ...(label ? { label } : {}) });
    if (error === 'invalid session id' && this.runs.get(secret) === run) void this.end(run, 'appium_session_lost');
    else this.armTimeout(run);
    // Appium's own view of the session names the bridge and the lab's ports: the client sees the phone's names.
    if (command.template === 'appium/capabilities' && reply.status === 200) return { ...reply, body: this.answered(run, reply.body) };
    return reply;
  }

  private answered(run: Run, body: Buffer): Buffer {
    const answer = parseJson(body) as { value?: unknown } | undefined;
    if (!answer || typeof answer.value !== 'object' || answer.value === null) return body;
    const value = answeredCapabilities(answer.value as Record<string, unknown>, { serial: run.target.serial, deviceName: run.deviceName, newCommandTimeoutS: run.newCommandTimeoutMs / 1000, ...(run.adbAddress ? { bridge: run.adbAddress } : {}) });
    return Buffer.from(JSON.stringify({ ...answer, value }));
  }

  /**
   * `mobile: installApp` and `appium/device/install_app`: the lab installs the app the command names (lab://files/<id>
   * or an http(s) URL, read and downloaded by the lab) with its own install path; Appium never sees the path.
   */
  private async install(run: Run, appPath: string, method: string, path: string): Promise<AppiumReply> {
    clearTimeout(run.timer);
    run.inFlight++;
    const at = this.now();
    const started = performance.now();
    try {
      const file = await this.parts.apps.file(run.scope, readAppRef(appPath, 'appPath'), run.platform, 'appPath');
      // The run's own phone, installed by the lab's install path (the run's control; the phone is watch-only to others).
      this.parts.activity.touch(run.allocationId);
      await this.parts.phones.driver(run.target.serial).install(this.parts.apps.pathOf(file));
      this.log(run, { at, method, path, status: 200, ms: Math.round(performance.now() - started) });
      return { status: 200, contentType: 'application/json; charset=utf-8', body: Buffer.from(JSON.stringify({ value: null })) };
    } catch (error) {
      const refused = error instanceof AppRefError || error instanceof AppUnavailable;
      this.log(run, { at, method, path, status: refused ? 400 : 500, ms: Math.round(performance.now() - started), error: refused ? 'invalid argument' : 'unknown error' });
      throw new WebDriverError(refused ? 'invalid argument' : 'unknown error', refused ? (error as Error).message : `The app was not installed: ${(error as Error).message}`);
    } finally {
      run.inFlight--;
      run.lastCommandAt = this.now();
      this.armTimeout(run);
    }
  }

  /** GET /session/{id}: the session's capabilities, as its new-session answer gave them (what Inspector attaches by). */
  capabilitiesOf(secret: string, scope: Scope | undefined): Record<string, unknown> {
    return this.find(secret, scope).capabilities;
  }

  /**
   * GET /status for a caller: ready only while a new session of theirs could start now (their role may start one, their
   * organization is under its quota, and a phone is free to them), with how many phones are; nothing of other
   * organizations' phones beyond that.
   */
  readiness(scope: Scope | undefined): { ready: boolean; freePhones: number; message: string } {
    if (this.stopped) return { ready: false, freePhones: 0, message: 'The lab is stopping.' };
    if (!scope) return { ready: false, freePhones: 0, message: 'Send an API key (HTTP Basic password, or Bearer) to learn whether a session of yours could start now.' };
    if (scope.role === 'readonly') return { ready: false, freePhones: 0, message: 'This key is read-only: it cannot start a session.' };
    const free = this.parts.allocator.freeFor(scope.organization.id).length;
    return free > 0
      ? { ready: true, freePhones: free, message: `${free} phone${free === 1 ? ' is' : 's are'} free: a session could start now.` }
      : { ready: false, freePhones: 0, message: 'No phone is free for you now (all are busy or reserved, or your organization holds its quota): a new session would wait in the queue.' };
  }

  /**
   * `executeScript('benchtop: status', [{status: 'passed' | 'failed', reason}])`: how a run says how it went, as the
   * clouds take it (BrowserStack's executor, Sauce's job-result); never sent on to Appium.
   */
  private verdict(run: Run, verdict: NonNullable<Run['verdict']>, label = LAB_SCRIPT): AppiumReply {
    run.verdict = verdict;
    return this.noted(run, label);
  }

  /** A script the lab answers itself (a status, a note): its line in the run's log, and W3C's null (or `value`). */
  private noted(run: Run, label = LAB_SCRIPT, value: unknown = null): AppiumReply {
    this.log(run, { at: this.now(), method: 'POST', path: '/execute/sync', status: 200, ms: 0, label });
    this.armTimeout(run);
    return { status: 200, contentType: 'application/json; charset=utf-8', body: Buffer.from(JSON.stringify({ value })) };
  }

  /**
   * BrowserStack's `getSessionDetails`, as a suite moving here reads it (a JSON string, its fields named as
   * BrowserStack names them): the run as the lab keeps it, its page the link a CI log prints.
   */
  private details(run: Run, label?: string): AppiumReply {
    const result = this.parts.testResults.getTestResult(run.scope, run.testResultId);
    const environment = (result.environment ?? {}) as Record<string, unknown>;
    const page = run.capabilities['benchtop:testResultUrl'] ?? null;
    return this.noted(run, label, JSON.stringify({
      name: result.name,
      status: run.verdict?.status ?? 'running',
      reason: run.verdict?.reason ?? null,
      build_name: environment.build ?? null,
      device: run.deviceName,
      os: run.platform,
      os_version: environment.platformVersion ?? null,
      hashed_id: result.id,
      duration: Math.round((this.now() - run.startedAt) / 1000),
      public_url: page,
      browser_url: page,
    }));
  }

  /** DELETE /session/{id}: ends Appium's session and releases the phone, then answers. */
  async delete(secret: string, scope: Scope | undefined): Promise<void> {
    await this.end(this.find(secret, scope), 'deleted');
  }

  /**
   * A member who means to act on a phone a run drives takes it over: the run ends as interrupted (its video, logs and
   * last screenshot kept), and the phone stays in the session, no longer watch-only, for whoever took it.
   */
  async takeOver(scope: Scope, sessionId: string, runId: string): Promise<void> {
    requireRole(scope.role, 'readwrite');
    this.parts.sessions.getSession(scope, sessionId);
    const run = [...this.byAllocation.values()].find((r) => r.id === runId && r.target.sessionId === sessionId && r.scope.organization.id === scope.organization.id);
    if (!run || run.ending) throw notFound('WebDriver run');
    await this.end(run, 'taken_over', scope.caller.user.email);
  }

  /** The organization's running sessions with their ids: what Appium Inspector lists to attach to one. */
  list(scope: Scope): Array<{ id: string; capabilities: Record<string, unknown>; created: number }> {
    requireRole(scope.role, 'readwrite');
    return [...this.runs.values()]
      .filter((run) => run.scope.organization.id === scope.organization.id && !run.ending)
      .map((run) => ({ id: run.secret, capabilities: run.capabilities, created: run.startedAt }));
  }

  /** The runs on a lab session's phones, with their command logs so far: what its page shows while they run. */
  runsOf(scope: Scope, sessionId: string): WebDriverRunView[] {
    this.parts.sessions.getSession(scope, sessionId);
    return [...this.runs.values()].filter((run) => run.scope.organization.id === scope.organization.id && run.target.sessionId === sessionId).map((run) => ({
      id: run.id,
      sessionId: run.target.sessionId,
      serial: run.target.serial,
      deviceName: run.deviceName,
      platform: run.platform,
      testResultId: run.testResultId,
      createdBy: run.scope.caller.user.email,
      startedAt: run.startedAt,
      lastCommandAt: run.lastCommandAt,
      newCommandTimeoutMs: run.newCommandTimeoutMs,
      commands: run.commands.slice(-200),
    }));
  }

  /** Whether an allocation is held by a running WebDriver session, and the member who started it. */
  heldBy(allocationId: string): { by: string } | undefined {
    const run = this.byAllocation.get(allocationId);
    return run && !run.ending ? { by: run.scope.caller.user.email } : undefined;
  }

  /** Each platform's Appium process (started by its first session) and the sessions running: for tests. */
  status(): { appium: Record<AppiumPlatform, { running: boolean; pid?: number }>; sessions: number } {
    const of = (appium: AppiumServer) => {
      const pid = appium.pid();
      return { running: appium.running(), ...(pid ? { pid } : {}) };
    };
    return { appium: { android: of(this.parts.appium.android), ios: of(this.parts.appium.ios) }, sessions: this.runs.size };
  }

  // ---- the end of a run ----

  /** The allocator's release hook: a run whose phone was released otherwise ends, before the phone's cleanup. */
  onReleased(row: DeviceAllocationRow): Promise<void> | undefined {
    const run = this.byAllocation.get(row.id);
    if (!run) return undefined;
    return this.end(run, 'released', row.releaseReason ?? 'released by a holder');
  }

  private armTimeout(run: Run): void {
    clearTimeout(run.timer);
    if (run.newCommandTimeoutMs === 0 || run.inFlight > 0 || run.ending) return;
    run.timer = setTimeout(() => {
      this.options.log(`WebDriver run ${run.id} on ${run.target.serial}: no command for ${run.newCommandTimeoutMs / 1000} s (appium:newCommandTimeout); it ends`);
      void this.end(run, 'new_command_timeout');
    }, run.newCommandTimeoutMs);
    run.timer.unref();
  }

  /**
   * Ends a run once, whatever asked: while the phone is still held, its last screenshot and the recording are kept
   * and Appium's session is deleted; then the phone is released (unless its release is what ended the run) and the
   * test result gets its status and assets.
   */
  private end(run: Run, reason: EndReason, detail?: string): Promise<void> {
    run.ending ??= (async () => {
      clearTimeout(run.timer);
      this.runs.delete(run.secret);
      const endedAt = this.now();
      this.log(run, { at: endedAt, method: reason === 'deleted' ? 'DELETE' : '', path: '', status: 200, ms: 0, label: `session ended (${endedWhy(reason, detail)})` });
      // Stopping, the lab keeps nothing more from the phone: it releases it at once.
      const held = reason !== 'released' && reason !== 'engine_stopped';
      const assets: Array<{ name: string; type: string; data: () => Promise<Buffer | undefined> }> = [];
      // The video ends where the run does: stopped before the last screenshot and Appium's own cleanup.
      if (held && run.recording) {
        const video = withTimeout(run.recording.then(() => this.parts.control.stopRecording(run.scope, run.target)), END_STEP_TIMEOUT_MS, 'Finishing the video');
        // The video ends when the run does (it was stopped then); its first picture came when the recorder had started
        // on the phone, a moment after it was asked: counted back from the end, a command's place in it is where it shows.
        video.then((mp4) => {
          const seconds = mp4Seconds(mp4);
          // At most a few seconds: a recorder that writes no picture while the screen stands still may end early.
          if (seconds !== undefined && run.recordingStartedAt !== undefined) run.recordingStartedAt += Math.min(MAX_RECORDER_LAG_MS, Math.max(0, Math.round(endedAt - seconds * 1000) - run.recordingStartedAt));
        }, (error: Error) => run.appiumLog.add(`[benchtop] the video was not kept: ${error.message}`));
        assets.push({ name: 'video.mp4', type: 'video/mp4', data: () => video.catch(() => undefined) });
      }
      if (held && run.appiumId) {
        const shot = await withTimeout(this.parts.control.screenshot(run.scope, run.target), END_STEP_TIMEOUT_MS, 'The last screenshot').catch(() => undefined);
        if (shot) assets.unshift({ name: `screenshot.${shot.format}`, type: `image/${shot.format}`, data: async () => shot.data });
      }
      if (run.appiumId && this.parts.appium[run.platform].running() && reason !== 'appium_session_lost' && reason !== 'engine_stopped') {
        const deleted = await withTimeout(this.parts.appium[run.platform].call('DELETE', `/session/${run.appiumId}`, undefined, END_STEP_TIMEOUT_MS), END_STEP_TIMEOUT_MS, 'Deleting Appium\'s session').catch((error: Error) => error);
        if (deleted instanceof Error) this.options.log(`WebDriver run ${run.id}: deleting Appium's session failed: ${deleted.message}`);
      }
      run.stopPhoneLog.abort();
      if (run.adbAddress) await this.options.privateAdb?.disconnect(run.adbAddress);
      this.logPrefixes.delete(run.appiumId.slice(0, 8));
      // A client's DELETE is its user's release; every other end is the lab's.
      // Taken over, the phone stays in the session for the member who took it.
      if (reason !== 'released' && reason !== 'taken_over') this.parts.allocator.expire(run.allocationId, reason === 'deleted' ? 'webdriver_ended' : `webdriver_${reason}`, reason === 'deleted' ? run.scope.caller.user.id : null);
      this.byAllocation.delete(run.allocationId);
      this.endSession(run.scope.organization.id, run.target.sessionId, run.createdSession);
      this.stores.webDriverRuns.end(run.id, this.now(), reason);
      await this.report(run, reason, detail, endedAt, assets).catch((error: Error) => this.options.log(`WebDriver run ${run.id}: its test result was not completed: ${error.message}`));
    })();
    return run.ending;
  }

  /** The test result: passed or failed as the client said; a run the lab ended without a word is interrupted. */
  private async report(run: Run, reason: EndReason, detail: string | undefined, endedAt: number, assets: Array<{ name: string; type: string; data: () => Promise<Buffer | undefined> }>): Promise<void> {
    const status = run.verdict?.status ?? (reason === 'deleted' ? 'passed' : 'interrupted');
    const why = endedWhy(reason, detail);
    // Recorded all along (the run's end was not known), and kept only if the run did not pass.
    const discarded = run.video === RETAIN_ON_FAILURE && status === 'passed' && assets.some((a) => a.name === 'video.mp4');
    if (discarded) {
      run.appiumLog.add(`[benchtop] the video was not kept: the run passed, and ${run.videoByLab ? "the lab keeps one only of a run that does not (its settings' webDriverVideo)" : `asked for one only when it does not (benchtop:options.video "${RETAIN_ON_FAILURE}")`}`);
      assets = assets.filter((a) => a.name !== 'video.mp4');
    }
    const text = (lines: string) => async () => Buffer.from(lines);
    const commands = run.commands.map(commandLine).join('\n');
    const all = [
      { name: 'commands.log', type: 'text/plain', data: text(`${commands}\n\nEnded: ${why}.${run.verdict?.reason ? `\nReason given: ${run.verdict.reason}` : ''}\n`) },
      { name: 'appium.log', type: 'text/plain', data: text(run.appiumLog.text()) },
      { name: run.platform === 'android' ? 'logcat.txt' : 'syslog.txt', type: 'text/plain', data: text(run.phoneLog.text()) },
      ...assets,
    ];
    for (const asset of all) {
      const data = await asset.data();
      if (!data) continue;
      await this.parts.testResults.addAsset(run.scope, run.testResultId, { name: asset.name, declaredType: asset.type, content: await this.parts.blobs.stage(Readable.from([data])) });
    }
    this.parts.testResults.updateTestResult(run.scope, run.testResultId, {
      status,
      // The client's words; a run the lab ended says why the lab did.
      reason: run.verdict?.reason ?? (status === 'interrupted' ? why : null),
      finishedAt: new Date(endedAt).toISOString(),
      stats: {
        commands: run.commands.length,
        duration: endedAt - run.startedAt,
        ended: reason,
        ...(run.verdict?.reason ? { reason: run.verdict.reason } : {}),
        ...(run.recordingStartedAt !== undefined && !discarded ? { videoStartedAt: new Date(run.recordingStartedAt).toISOString() } : {}),
        ...(run.videoLowDisk ? { video: 'low-disk' } : run.video === false ? { video: 'off' } : discarded ? { video: 'discarded' } : {}),
        // Whose choice that was, when it was the lab's: the result's page says so.
        ...((run.video === false || discarded) && run.videoByLab && !run.videoLowDisk ? { videoChosenBy: 'lab' } : {}),
      },
    });
  }

  // ---- what a run keeps: the phone's log, the video, Appium's log ----

  private record(run: Run): void {
    const { scope, target } = run;
    void (async () => {
      try {
        for await (const line of this.parts.control.logs(scope, target).lines(run.stopPhoneLog.signal)) {
          run.phoneLog.add(`${line.time} ${line.level.toUpperCase().padEnd(7)} ${line.tag}(${line.pid}): ${line.message}`);
        }
      } catch (error) {
        if (!run.stopPhoneLog.signal.aborted) run.phoneLog.add(`[the phone's log stopped: ${(error as Error).message}]`);
      }
    })();
  }

  /** The run's video, with no time limit: segments chained past the phone's own three minutes. */
  private startVideo(run: Run): void {
    const asked = this.now();
    run.recording = this.parts.control.startRecording(run.scope, run.target, { continuous: true }).then((started) => {
      run.recordingStartedAt = Math.max(asked, started.startedAt.getTime());
    });
    run.recording.catch((error: Error) => run.appiumLog.add(`[benchtop] the screen recording did not start: ${error.message}`));
  }

  /** Elements a find answered with, by the locator that found them (a find again moves one to the newest). */
  private remember(run: Run, ids: string[], locator: string): void {
    for (const id of ids) {
      run.elements.delete(id);
      run.elements.set(id, locator);
    }
    for (const oldest of run.elements.keys()) {
      if (run.elements.size <= MAX_ELEMENTS) break;
      run.elements.delete(oldest);
    }
  }

  private log(run: Run, entry: CommandEntry): void {
    run.commands.push(entry);
    if (run.commands.length > MAX_COMMANDS) run.commands.splice(0, run.commands.length - MAX_COMMANDS);
  }

  /** Appium prefixes what a session does with the first 8 characters of its id: each line goes to its run. */
  private appiumLine(line: string): void {
    if (this.starting > 0) {
      this.recentLines.push(line);
      if (this.recentLines.length > MAX_STARTING_LINES) this.recentLines.splice(0, this.recentLines.length - MAX_STARTING_LINES);
    }
    if (this.logPrefixes.size === 0) return;
    for (const [prefix, run] of this.logPrefixes) {
      if (line.includes(prefix)) return run.appiumLog.add(line);
    }
  }

  /** A platform's Appium exited: its sessions have ended; the other platform's go on. */
  private appiumDied(platform: AppiumPlatform): void {
    for (const run of [...this.byAllocation.values()]) if (run.platform === platform) void this.end(run, 'appium_died');
  }

  /** At start: runs the engine died with end, and their phones go back to the lab. */
  recover(): void {
    for (const row of this.stores.webDriverRuns.running()) {
      this.stores.webDriverRuns.end(row.id, this.now(), 'engine_restarted');
      this.parts.allocator.expire(row.allocationId, 'webdriver_engine_restarted');
      const result = row.testResultId ? this.stores.testResults.get(row.testResultId, row.organizationId) : undefined;
      if (result && (result.status === 'running' || result.status === 'queued')) {
        this.stores.testResults.update({ ...result, status: 'interrupted', finishedAt: this.now(), updatedAt: Math.max(this.now(), result.updatedAt) });
      }
    }
  }

  /** Engine stop: every run ends (its client's next command is an invalid session id) and Appium stops. */
  async stop(): Promise<void> {
    this.stopped = true;
    // No retry will come: what waited for one goes back to the lab now.
    for (const entry of [...this.abandoned.values()].flat()) {
      clearTimeout(entry.timer);
      this.parts.allocator.expire(entry.allocationId, 'webdriver_client_gone');
    }
    this.abandoned.clear();
    await Promise.all([...this.byAllocation.values()].map((run) => this.end(run, 'engine_stopped')));
    // Appium before its adb server: an adb command Appium runs while it ends would start a new server of its own
    // (a daemon no guard ends) if it found none.
    await Promise.all(Object.values(this.parts.appium).map((appium) => appium.stop()));
    await this.options.privateAdb?.stop();
  }
}

/**
 * What goes to Appium for the app the lab installed: its package (Android) or bundle id (iOS), to launch, unless the
 * client named one itself. `fullReset` goes: the lab installed the app fresh and its release uninstalls it, and the
 * driver refuses a full reset without an app of its own to reinstall.
 */
function launchCapabilities(request: NewSessionRequest, app: FileRow | undefined, launches: boolean): Record<string, unknown> {
  if (!app || !launches) return request.appium;
  const caps = { ...request.appium };
  delete caps['appium:fullReset'];
  const name = request.platform === 'android' ? 'appium:appPackage' : 'appium:bundleId';
  caps[name] ??= app.bundleId;
  return caps;
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

function w3cErrorOf(body: Buffer): string | undefined {
  const error = (parseJson(body) as { value?: { error?: unknown } } | undefined)?.value?.error;
  return typeof error === 'string' ? error : undefined;
}

/** How a run ended, in words: the run's log and its test result's reason say it. */
function endedWhy(reason: EndReason, detail: string | undefined): string {
  switch (reason) {
    case 'deleted': return 'deleted by the client';
    case 'taken_over': return `taken over by ${detail}`;
    case 'released': return `its phone was released (${detail})`;
    case 'new_command_timeout': return 'no command within appium:newCommandTimeout';
    default: return reason.replaceAll('_', ' ');
  }
}

/** A line of commands.log: `<time> <method> <path> (<label>) <status> <ms> ms [<error>]`; the session's end in words. */
function commandLine(c: CommandEntry): string {
  const what = c.path === '' && c.label ? c.label : `${c.method} ${c.path || '/'}${c.label ? ` (${c.label})` : ''}`;
  return `${new Date(c.at).toISOString()} ${what} ${c.status} ${c.ms} ms${c.error ? ` ${c.error}` : ''}`;
}
