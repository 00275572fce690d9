import type { Readable } from 'node:stream';
import type { ActionResult, DeviceAction, DeviceInfo, UiElement } from '../../../shared/api/devices.js';

export type { ActionResult, Button, DeviceAction, DeviceInfo, UiElement } from '../../../shared/api/devices.js';

/**
 * device: usable; unauthorized: the phone has not trusted this computer; wda_unavailable: an iPhone whose
 * WebDriverAgent is not answering; offline: attached but not answering; gone: not attached.
 */
export type PhoneState = 'device' | 'unauthorized' | 'wda_unavailable' | 'offline' | 'gone';

/** A phone as the fleet sees it right now. */
export interface Phone {
  serial: string;
  platform: 'android' | 'ios';
  type: 'real';
  name: string;
  osVersion: string;
  state: PhoneState;
  battery: number | null;
  /** The hardware model as the phone names it (Android: ro.product.model; iPhone: lockdown's ProductType, e.g. iPhone14,6). */
  model?: string;
  /** While it is unauthorized or wda_unavailable: what a person must do so that it can be allocated. */
  steps?: string;
  /** The provider the phone is plugged into (its name); absent for this workstation's own USB. */
  host?: string;
  /** Its provider is paused: listed and kept by whoever holds it, but not handed to a new allocation. */
  paused?: boolean;
  /**
   * An iPhone whose WebDriverAgent answers: how it runs. lockdown, tunnel, devicectl: the lab started it (testmanagerd
   * over lockdown before iOS 17, a go-ios userspace tunnel on 17.4+, a Mac's devicectl); external: it was answering
   * already. Absent on Android phones and while WDA does not answer.
   */
  wdaLaunch?: 'lockdown' | 'tunnel' | 'devicectl' | 'external';
}

/** What a phone held when an allocation began: its release puts the phone back to it. */
export interface PhoneBaseline {
  /** The installed packages (Android) or user apps (iPhone). */
  packages: string[];
  /**
   * Android: every path in shared storage and adb's scratch folder; iPhone: every entry in the shared Documents of its
   * apps, as `<bundle id>:<path>`. Absent when there were too many to list in time.
   */
  files?: string[];
  /**
   * Android: what was running: the packages with a process, and the pids of the processes adb's `shell` user ran
   * (adbd's own among them on a production build).
   */
  processes?: { packages: string[]; shell: number[] };
}

/** Driving one phone: what every platform implements, and the only way the engine touches a phone. */
export interface PhoneDriver {
  /** Wakes the screen, dismisses the keyguard, goes home; returns what the phone holds now, for cleanup to go back to. */
  prepare(): Promise<PhoneBaseline>;
  /**
   * Puts the phone back as `before` found it for the next holder: uninstalls what was added, removes added files,
   * force-stops what the holder started, clears the clipboard, goes home, resets rotation (docs/sharing.md).
   */
  cleanup(before: PhoneBaseline): Promise<void>;
  /** Installs the app file at a local path (an APK on Android), replacing an earlier version. */
  install(appPath: string): Promise<void>;
  /** A PNG of the screen. */
  screenshot(): Promise<Buffer>;
  elements(): Promise<UiElement[]>;
  /** The signal, when it aborts, stops the command on the phone. */
  act(action: DeviceAction, signal?: AbortSignal): Promise<ActionResult>;
  /** Model, OS, ABI, screen, battery and network, as the phone reports them now. */
  info(): Promise<DeviceInfo>;
  /** Restarts the phone; resolves once it has been asked to (the phone then drops off the bus and comes back). */
  reboot(): Promise<void>;
  /**
   * Frames the phone pushes as its screen changes (Android: minicap; iOS: WebDriverAgent's MJPEG), until `signal` aborts; absent where the
   * platform has no such feed (iOS: WebDriverAgent's MJPEG). Throws when the phone cannot run it, so the caller can fall back to screenshots.
   */
  liveFrames?(signal: AbortSignal, options: { maxSize: number; maxFps: number }): AsyncIterable<LiveFrame>;
  /**
   * The screen as H.264 access units from the phone's own encoder (Android: screenrecord), restarted at its time limit
   * and on a rotation, until `signal` aborts; absent where the platform has none. Throws when it gives no picture.
   */
  liveVideo?(signal: AbortSignal, options: { maxSize: number }): AsyncIterable<LiveFrame>;
  /**
   * Holds the live video's encoder back until the answer is called: an encoder that was ended meanwhile (a suite's
   * own screen recording ends every one on the phone, and waits for none to be left) starts again only then.
   */
  holdLiveVideo?(): () => void;
  /** The phone's log from the start of the allocation on, then live, until `signal` aborts. */
  logs?(signal: AbortSignal): AsyncIterable<LogLine>;
  /** An interactive shell behind a PTY (Android: adb's `shell,v2,pty`); absent where the platform has none (iOS). */
  openShell?(size: TerminalSize, handlers: ShellHandlers): Promise<PhoneShell>;
  /**
   * The entries of a folder; throws FileMissing when there is no such folder. `app` names the app whose container the
   * path is in, on a phone whose files are reached by app (an iPhone: house_arrest); Android has one file tree.
   */
  listFiles?(path: string, app?: string): Promise<PhoneFileEntry[]>;
  /** A file's bytes; throws FileMissing when there is no such file. */
  readFile?(path: string, app?: string): Promise<Readable>;
  /** Writes a file, replacing one of the same name. */
  writeFile?(path: string, content: Readable, app?: string): Promise<void>;
  /** Deletes a file, or a folder with what is in it; throws FileMissing when there is neither. */
  deleteFile?(path: string, app?: string): Promise<void>;
  /**
   * The apps whose files can be reached (an iPhone: those that share their Documents, UIFileSharingEnabled); absent
   * where files are reached by folder rather than by app (Android).
   */
  fileApps?(): Promise<Array<{ bundleId: string; name: string }>>;
  /** The apps someone installed (not the system's own), by package name or bundle id. */
  installedApps?(): Promise<string[]>;
  /** The same apps with what the phone says of each (an iPhone's installation_proxy: its name and version). */
  installedAppDetails?(): Promise<Array<{ packageName: string; name?: string; version?: string }>>;
  /** Starts recording the screen; `stop` ends the recording and answers it as an MP4. */
  startRecording?(): Promise<ScreenRecording>;
}

export interface TerminalSize {
  cols: number;
  rows: number;
}

export interface ShellHandlers {
  output(data: Buffer): void;
  /** The shell ended: its exit status, or null when the connection to the phone dropped. */
  exit(status: number | null): void;
}

export interface PhoneShell {
  write(data: Buffer): void;
  resize(size: TerminalSize): void;
  close(): void;
}

export interface PhoneFileEntry {
  name: string;
  type: 'file' | 'directory' | 'link';
  size: number;
  modifiedAt: Date;
}

/** No file or folder at that path on the phone. */
export class FileMissing extends Error {}

export interface ScreenRecording {
  /** How long the phone records before it stops by itself. */
  timeLimitSeconds: number;
  stop(): Promise<Buffer>;
  /** Ends the recording without keeping it (the engine is stopping). */
  cancel(): void;
  /**
   * Runs `work` with the phone's recorder stopped and what it recorded kept, and starts recording again after it: for
   * what ends every recorder on the phone (Appium's start and stop of a suite's own recording kill every screenrecord).
   */
  aside?<T>(work: () => Promise<T>): Promise<T>;
}

/** One log line (logcat on Android, syslog on iOS). */
export interface LogLine {
  /** ISO 8601, UTC. */
  time: string;
  level: 'verbose' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';
  tag: string;
  pid: number;
  message: string;
}

/**
 * One frame of a live feed. A JPEG stands alone; an H.264 access unit (`video` set) may depend on the ones before it
 * back to the last keyframe, so whoever relays it must hand a new or lagging viewer that keyframe first.
 */
export interface LiveFrame {
  data: Buffer;
  format: 'jpeg' | 'h264';
  /** The picture's own size (read from a JPEG; the size screenrecord was asked for). */
  width: number;
  height: number;
  source: 'minicap' | 'mjpeg' | 'screenrecord';
  /** The phone's screen the frame shows, in the phone's pixels (what taps use); the frame may be scaled down. */
  screen: { width: number; height: number };
  video?: LiveVideo;
}

/** What an H.264 access unit carries beyond its bytes (Annex B, parameter sets in band before each keyframe). */
export interface LiveVideo {
  /** An IDR picture, with its SPS and PPS: a decoder may start here. */
  keyframe: boolean;
  /** RFC 6381 codec string from the SPS (avc1.PPCCLL), what a WebCodecs VideoDecoder is configured with. */
  codec: string;
  /** Milliseconds since the feed started, when the engine received it. */
  timestamp: number;
}

/** The hardware side: which phones are attached, a driver for each, and news of phones coming and going. */
export interface PhoneSource {
  list(): Phone[];
  get(serial: string): Phone | undefined;
  driver(serial: string): PhoneDriver;
  on(event: 'phone', listener: (phone: Phone) => void): unknown;
  on(event: 'gone', listener: (serial: string) => void): unknown;
  off(event: 'phone', listener: (phone: Phone) => void): unknown;
  off(event: 'gone', listener: (serial: string) => void): unknown;
}
