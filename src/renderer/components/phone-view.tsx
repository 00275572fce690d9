import { useCallback, useRef, useState, type KeyboardEvent } from 'react';
import type { Button, DeviceAction, DeviceInfo } from '../../shared/api/devices.js';
import { modelName, platformName } from '../../shared/phone-models.js';
import type { Device } from '../../shared/api/sessions.js';
import { api, uploadsStore } from '../app-context.js';
import { isAppFile, notAnAppMessage } from '../file-errors.js';
import { ErrorBanner, fmtDuration, Spinner, Status, useAction, useLoad, useNow } from '../ui.js';
import { ChatView } from './chats-panel.js';
import { saveBlob, stampedName } from './download.js';
import { LogcatPane } from './logcat-pane.js';
import { PhoneApps, type InstallJob } from './phone-apps.js';
import { PhoneFiles } from './phone-files.js';
import { IdleCountdown } from './release-warnings.js';
import { releaseByMe } from './released-here.js';
import { RemoteConnectPanel } from './remote-connect-panel.js';
import { PhoneScreen, type ScreenCodec, type ScreenFeed } from './phone-screen.js';
import { PhoneShell } from './phone-shell.js';
import { WebDriverRunPanel } from './webdriver-runs.js';
import type { WebDriverRun } from '../../shared/api/webdriver.js';

const RECORD_LABELS = ['Record screen', 'Stop and download recording', 'Saving the recording…'] as const;

const INFO_POLL_MS = 30_000;
const SIDE_TABS = ['Details', 'Logcat', 'Shell', 'Files', 'Apps', 'Assistant'] as const;
type SideTab = (typeof SIDE_TABS)[number];
/** What a watcher may open while a WebDriver run drives the phone: what only reads it. */
const WATCH_TABS: readonly SideTab[] = ['Details', 'Logcat'];
/** An iPhone's log is its syslog, not logcat. */
const tabLabel = (tab: SideTab, platform: string) => (tab === 'Logcat' && platform === 'ios' ? 'Syslog' : tab);

/**
 * The buttons each platform's phone has, as the toolbar shows them: an iPhone has no Back or Recent apps button
 * (its driver refuses them), and its side button locks and wakes it.
 */
const TOOLBAR: Record<'android' | 'ios', { navigation: Array<[Button, string]>; hardware: Array<[Button, string]> }> = {
  android: {
    navigation: [['BACK', 'Back'], ['HOME', 'Home'], ['APP_SWITCH', 'Recent apps']],
    hardware: [['VOLUME_DOWN', 'Volume down'], ['VOLUME_UP', 'Volume up'], ['POWER', 'Power']],
  },
  ios: {
    navigation: [['HOME', 'Home']],
    hardware: [['VOLUME_DOWN', 'Volume down'], ['VOLUME_UP', 'Volume up'], ['POWER', 'Side button']],
  },
};

const yesNo = (v: boolean | null, yes: string, no: string) => (v === null ? '—' : v ? yes : no);

function DeviceDetails({ info, loading, error }: { info: DeviceInfo | undefined; loading: boolean; error: string | undefined }) {
  if (!info) return loading ? <Spinner label="Reading the phone's details" /> : <ErrorBanner error={error} />;
  const { screen, battery, network } = info;
  return (
    <dl className="facts" aria-label="Phone details">
      <dt>Model</dt><dd>{info.manufacturer} {modelName(info.model)}{modelName(info.model) !== info.model && <span className="muted"> ({info.model})</span>}</dd>
      <dt>OS</dt><dd>{platformName(info.platform)} {info.osVersion}{info.sdk !== null && ` (API ${info.sdk})`}</dd>
      <dt>Resolution</dt><dd>{screen.width && screen.height ? `${screen.width} × ${screen.height}` : '—'}{screen.density && ` · ${screen.density} dpi`}</dd>
      <dt>{info.platform === 'ios' ? 'CPU' : 'ABI'}</dt><dd><code>{info.abi || '—'}</code></dd>
      <dt>Battery</dt><dd>{battery.level === null ? '—' : `${battery.level}%`}{battery.charging !== null && ` · ${battery.charging ? 'charging' : 'on battery'}`}</dd>
      <dt>Network</dt><dd>{network.airplaneMode ? 'Airplane mode' : `Wi-Fi ${yesNo(network.wifi, 'on', 'off')}`}</dd>
      <dt>Serial</dt><dd><code>{info.serial}</code></dd>
    </dl>
  );
}

let jobCounter = 0;

/** "Recording 0:12 of 3:00": how long the screen has been recorded, of the most the phone records at once. */
function RecordingTimer({ since, limitSeconds }: { since: number; limitSeconds: number }) {
  const now = useNow(1000);
  return <span className="recording-timer" role="timer" aria-label="Recording time">Recording {fmtDuration(now - since)} of {fmtDuration(limitSeconds * 1000)}</span>;
}

/**
 * One phone of the session, the way a lab engineer works with it: the screen as large as the window allows, its
 * buttons, its details, its live log, the assistant beside it, and apps dropped straight onto it.
 */
export function PhoneView({ sessionId, device, onChange, heldBy, run, onTakenOver }: { sessionId: string; device: Device; onChange(): void; heldBy?: string; run?: WebDriverRun; onTakenOver?(): void }) {
  const [asked, setAsked] = useState(false);
  // Another member's phone: ask them first, rather than tap, type or release under their hands. A phone a WebDriver
  // run drives is watch-only anyway: anyone may watch it.
  if (heldBy && !asked && !run) {
    return (
      <section className="card warning" aria-label={`${device.info.name} held by ${heldBy}`}>
        <p><strong>{heldBy}</strong> holds {device.info.name} in this session. Ask them before you act on it or release it.</p>
        <div className="button-row">
          <button type="button" onClick={() => setAsked(true)}>I asked {heldBy}: open {device.info.name}</button>
        </div>
      </section>
    );
  }
  return <HeldPhone sessionId={sessionId} device={device} onChange={onChange} run={run} onTakenOver={onTakenOver ?? onChange} />;
}

/** The toolbar's groups: a button's refusal shows in its own. */
type ToolbarGroup = 'Navigation' | 'Hardware buttons' | 'View' | 'Restart';

/** How the status line and the codec switch name a live screen's format. */
const FORMATS: Record<string, string> = { h264: 'H.264', jpeg: 'JPEG', png: 'PNG' };

function HeldPhone({ sessionId, device, onChange, run, onTakenOver }: { sessionId: string; device: Device; onChange(): void; run?: WebDriverRun; onTakenOver(): void }) {
  /** A WebDriver run drives the phone: every control that acts on it is off, for everyone, until someone takes it over. */
  const watchOnly = run !== undefined;
  const serial = device.info.serial!;
  const name = device.info.name;
  const [zoom, setZoom] = useState<'fit' | 'actual'>('fit');
  const [codec, setCodec] = useState<ScreenCodec>('auto');
  const [feed, setFeed] = useState<ScreenFeed>({ source: undefined, format: undefined, fps: 0 });
  const [tab, setTab] = useState<SideTab>('Details');
  const [opened, setOpened] = useState<Set<SideTab>>(new Set(['Details']));
  const [jobs, setJobs] = useState<InstallJob[]>([]);
  const [error, setError] = useState<string>();
  const [restart, setRestart] = useState<'idle' | 'confirm' | 'restarting'>('idle');
  const [refused, setRefused] = useState<{ group: ToolbarGroup; message: string }>();
  const [releasing, setReleasing] = useState(false);
  const [recording, setRecording] = useState<'idle' | 'starting' | 'recording' | 'stopping'>('idle');
  /** When the recording started, on this computer's clock (the lab's may differ), and the most the phone records. */
  const [recorded, setRecorded] = useState<{ since: number; limitSeconds: number }>();
  /** Bumped when the phone is back from a restart: the screen connects again (its feed ended when the phone left). */
  const [screenGeneration, setScreenGeneration] = useState(0);
  const info = useLoad(() => api.deviceInfo(sessionId, serial), [sessionId, serial], INFO_POLL_MS);
  const release = useAction();
  const queue = useRef<Promise<unknown>>(Promise.resolve());

  /** Actions run one after another, in the order they were made: typed text, then the Backspace after it. */
  const enqueue = useCallback((action: DeviceAction) => {
    const run = queue.current.then(() => api.act(sessionId, serial, action));
    queue.current = run.catch(() => undefined);
    return run;
  }, [sessionId, serial]);
  /** What the screen sends (taps, keys, paste): a refusal shows under the screen, where the pointer was. */
  const act = useCallback((action: DeviceAction) => {
    const run = enqueue(action);
    run.then(() => setError(undefined), (e: Error) => setError(e.message));
    return run;
  }, [enqueue]);
  /** A toolbar button's work: a refusal shows in the button's own group, where the click was. */
  const fromToolbar = (group: ToolbarGroup, work: () => Promise<unknown>) => () => {
    setRefused(undefined);
    void work().catch((e: Error) => setRefused({ group, message: e.message }));
  };
  const refusal = (group: ToolbarGroup) => refused?.group === group && <span role="alert" className="error inline">{refused.message}</span>;

  const rotate = async () => {
    const { orientation } = await enqueue({ type: 'getOrientation' }) as { orientation?: string };
    await enqueue({ type: 'setOrientation', orientation: orientation === 'landscape' ? 'portrait' : 'landscape' });
  };

  /** A lossless PNG captured now, not the live feed's JPEG. */
  const screenshot = async () => saveBlob(await api.screenshotPng(sessionId, serial), stampedName(name, 'png'));

  const toggleRecording = async () => {
    try {
      if (recording === 'idle') {
        setRecording('starting');
        const { timeLimitSeconds } = await api.startRecording(sessionId, serial);
        setRecorded({ since: Date.now(), limitSeconds: timeLimitSeconds });
        setRecording('recording');
      } else if (recording === 'recording') {
        setRecording('stopping');
        saveBlob(await api.stopRecording(sessionId, serial), stampedName(name, 'mp4'));
        setRecording('idle');
      }
    } catch (e) {
      setRecording('idle');
      throw e;
    }
  };

  const restartPhone = async () => {
    setRestart('restarting');
    try {
      await api.rebootDevice(sessionId, serial);
      setScreenGeneration((g) => g + 1);
    } finally {
      setRestart('idle');
    }
  };

  const patchJob = (id: number, patch: Partial<InstallJob>) => setJobs((js) => js.map((j) => (j.id === id ? { ...j, ...patch } : j)));
  const installFiles = (files: File[]) => {
    setTab('Apps');
    setOpened((o) => new Set(o).add('Apps'));
    for (const file of files) {
      const id = ++jobCounter;
      const wrongPlatform = device.info.platform === 'android' ? /\.ipa$/i.test(file.name) : /\.apk$/i.test(file.name);
      if (!isAppFile(file.name) || wrongPlatform) {
        const message = wrongPlatform ? `${file.name} is an app for the other platform: ${name} runs ${platformName(device.info.platform)}.` : notAnAppMessage(file.name);
        setJobs((js) => [{ id, filename: file.name, phase: 'failed', message }, ...js]);
        continue;
      }
      setJobs((js) => [{ id, filename: file.name, phase: 'uploading' }, ...js]);
      void (async () => {
        const upload = await uploadsStore.getState().upload(file, (uploadKey) => patchJob(id, { uploadKey }));
        if (upload.phase !== 'ready' || !upload.file) return patchJob(id, { phase: 'failed', message: upload.error ?? 'The upload failed.' });
        patchJob(id, { phase: 'installing' });
        try {
          const result = await api.install(sessionId, serial, upload.file.id, true);
          patchJob(id, { phase: 'installed', message: `Installed ${result.bundleId} on ${name}${result.launched ? ' and opened it' : ''}.` });
        } catch (e) {
          patchJob(id, { phase: 'failed', message: (e as Error).message });
        }
      })();
    }
  };

  const choose = (next: SideTab) => {
    setTab(next);
    setOpened((o) => new Set(o).add(next));
  };
  const sideTabs = watchOnly ? WATCH_TABS : SIDE_TABS;
  const shownTab = sideTabs.includes(tab) ? tab : 'Details';
  const onTabKey = (event: KeyboardEvent) => {
    const step = event.key === 'ArrowRight' ? 1 : event.key === 'ArrowLeft' ? -1 : 0;
    if (!step) return;
    const next = sideTabs[(sideTabs.indexOf(shownTab) + step + sideTabs.length) % sideTabs.length]!;
    choose(next);
    document.getElementById(`side-tab-${serial}-${next}`)?.focus();
  };

  const press = (group: ToolbarGroup, button: Button) => fromToolbar(group, () => enqueue({ type: 'pressButton', button }));
  const platform = device.info.platform === 'ios' ? 'ios' : 'android';
  const buttons = TOOLBAR[platform];
  const displaySize = info.data?.screen.width && info.data.screen.height ? { width: info.data.screen.width, height: info.data.screen.height } : undefined;
  const slow = feed.source === 'screencap';

  return (
    <section className="phone" aria-label={`${name} ${device.status}`}>
      {/* The headings of the panel beside the screen (h3) come under the phone's own, as axe's heading order asks. */}
      <h2 className="visually-hidden">{name}</h2>
      <div className="phone-toolbar" role="toolbar" aria-label={`Controls of ${name}`}>
        <div className="group" role="group" aria-label="Navigation">
          {buttons.navigation.map(([button, label]) => <button key={button} type="button" disabled={watchOnly} onClick={press('Navigation', button)}>{label}</button>)}
          {refusal('Navigation')}
        </div>
        <div className="group" role="group" aria-label="Hardware buttons">
          {buttons.hardware.map(([button, label]) => <button key={button} type="button" disabled={watchOnly} onClick={press('Hardware buttons', button)}>{label}</button>)}
          {refusal('Hardware buttons')}
        </div>
        <div className="group" role="group" aria-label="View">
          <button type="button" disabled={watchOnly} onClick={fromToolbar('View', rotate)}>Rotate</button>
          <button type="button" aria-pressed={zoom === 'fit'} onClick={() => setZoom('fit')} aria-label="Fit the screen to the window">Fit</button>
          <button type="button" aria-pressed={zoom === 'actual'} onClick={() => setZoom('actual')} aria-label="1:1, one phone pixel per screen pixel">1:1</button>
          <button type="button" onClick={fromToolbar('View', screenshot)} title="Saves a lossless PNG of the phone's screen">Screenshot</button>
          <button type="button" className="steady-label" aria-pressed={recording === 'recording'} disabled={watchOnly || recording === 'starting' || recording === 'stopping'} onClick={fromToolbar('View', toggleRecording)}>
            {RECORD_LABELS.map((label) => {
              const shown = label === (recording === 'recording' ? RECORD_LABELS[1] : recording === 'stopping' ? RECORD_LABELS[2] : RECORD_LABELS[0]);
              // Every label takes the same cell, the others unseen: the button is as wide as its longest, so nothing
              // beside it moves when a recording starts or stops.
              return <span key={label} className={shown ? undefined : 'sizer'} aria-hidden={!shown}>{label}</span>;
            })}
          </button>
          {refusal('View')}
        </div>
        {platform === 'android' && (
          <div className="group" role="group" aria-label="Screen codec">
            {(['h264', 'jpeg'] as const).map((c) => (
              <button
                key={c}
                type="button"
                aria-pressed={codec === c || (codec === 'auto' && (feed.format === 'h264') === (c === 'h264') && feed.source !== undefined)}
                onClick={() => setCodec(c)}
                title={c === 'h264' ? 'H.264 from the phone\'s own encoder (screenrecord): a tenth of the bytes, where this browser decodes it' : 'JPEG frames from minicap'}
              >
                {FORMATS[c]}
              </button>
            ))}
          </div>
        )}
        <div className="group" role="group" aria-label="Restart">
          {restart === 'idle' && <button type="button" disabled={watchOnly} onClick={() => setRestart('confirm')}>Restart…</button>}
          {restart === 'confirm' && (
            <>
              <span>Restart {name}?</span>
              <button type="button" className="danger" onClick={fromToolbar('Restart', restartPhone)}>Restart now</button>
              <button type="button" onClick={() => setRestart('idle')}>Cancel</button>
            </>
          )}
          {restart === 'restarting' && <span role="status"><Spinner label="Restarting" /> Restarting {name}: it stays yours while it is away.</span>}
          {refusal('Restart')}
        </div>
        <div className="group" role="group" aria-label="Release">
          {!releasing ? <button type="button" className="danger" disabled={watchOnly} onClick={() => setReleasing(true)}>Release {name}…</button> : (
            <>
              <span>Release {name}? The apps installed in this session are uninstalled.</span>
              <button
                type="button"
                className="danger"
                disabled={release.pending}
                onClick={() => void release.run(async () => {
                  await releaseByMe(sessionId, device);
                  onChange();
                })}
              >
                Release now
              </button>
              <button type="button" onClick={() => { setReleasing(false); release.setError(undefined); }}>Cancel</button>
            </>
          )}
          {/* A refusal shows where the click was, not in the panel below the screen. */}
          {release.error && <span role="alert" className="error inline">{release.error}</span>}
        </div>
      </div>

      {/* One line of fixed height, every text that changes on its own in it: what it says never moves the toolbar or
          the screen (a countdown appearing above the screen pushed it down under a second tap). */}
      <div className="phone-status">
        <Status value={device.status} />
        <IdleCountdown at={device.idleReleaseAt} />
        {recording === 'recording' && recorded && <RecordingTimer {...recorded} />}
        <span className="source-badge muted" role="status" title={slow ? 'minicap is not running on this phone: each frame is a full screencap, which takes seconds on a real phone.' : undefined}>
          {!feed.source ? 'Connecting…' : `${feed.source} · ${FORMATS[feed.format ?? ''] ?? (feed.format ?? '').toUpperCase()} · ${feed.fps === 0 ? 'waiting for the screen to change' : `${feed.fps.toFixed(feed.fps < 10 ? 1 : 0)} fps`}${feed.reason ? ` (${feed.reason})` : ''}`}
        </span>
      </div>

      {/* The panel comes before the screen in the page's order: the screen takes Tab for the phone, so it is the
          last stop, and Shift+Tab leaves it back into the panel. */}
      <aside className="phone-side" aria-label={`${name}: details, log, shell, files, apps and assistant`}>
        {run && <WebDriverRunPanel sessionId={sessionId} run={run} onTakenOver={onTakenOver} />}
        <div className="side-tabs" role="tablist" aria-label={`About ${name}`} onKeyDown={onTabKey}>
          {sideTabs.map((t) => (
            <button
              key={t}
              id={`side-tab-${serial}-${t}`}
              role="tab"
              type="button"
              aria-selected={shownTab === t}
              aria-controls={`side-panel-${serial}-${t}`}
              tabIndex={shownTab === t ? 0 : -1}
              onClick={() => choose(t)}
            >
              {tabLabel(t, platform)}
            </button>
          ))}
        </div>
        {sideTabs.filter((t) => opened.has(t)).map((t) => (
          <div key={t} id={`side-panel-${serial}-${t}`} className="side-panel" role="tabpanel" aria-labelledby={`side-tab-${serial}-${t}`} hidden={shownTab !== t}>
            {t === 'Details' && <DeviceDetails info={info.data} loading={info.loading} error={info.error} />}
            {t === 'Logcat' && <LogcatPane sessionId={sessionId} serial={serial} name={name} generation={screenGeneration} />}
            {t === 'Shell' && <PhoneShell sessionId={sessionId} serial={serial} name={name} platform={platform} />}
            {t === 'Files' && <PhoneFiles sessionId={sessionId} serial={serial} name={name} platform={platform} />}
            {t === 'Apps' && <PhoneApps sessionId={sessionId} device={device} jobs={jobs} onFiles={installFiles} onDismiss={(id) => setJobs((js) => js.filter((j) => j.id !== id))} />}
            {t === 'Assistant' && <PhoneChat sessionId={sessionId} device={device} />}
          </div>
        ))}
      </aside>

      <PhoneScreen
        key={screenGeneration}
        sessionId={sessionId}
        serial={serial}
        name={name}
        platform={platform}
        displaySize={displaySize}
        zoom={zoom}
        codec={codec}
        act={act}
        onFeed={setFeed}
        onFiles={installFiles}
        watchOnly={watchOnly}
      />

      <div className="phone-foot">
        <p id={`keys-help-${serial}`} className="keys-help muted">
          {platform === 'ios' ? (
            <>
              Click to tap, drag to swipe, scroll to scroll. With the screen focused, typing goes to the iPhone's
              focused field, Enter and Backspace too, and Ctrl+V (⌘ on a Mac) pastes this computer's clipboard. Tab and
              Shift+Tab leave the screen. Drop an .ipa on it to install it.
            </>
          ) : (
            <>
              Click to tap, drag to swipe, scroll to scroll. With the screen focused, typing goes to the phone: Enter,
              Backspace, Delete, arrows, Tab and Esc too; Ctrl+A, C and X (⌘ on a Mac) select, copy and cut on the phone,
              and Ctrl+V pastes this computer's clipboard. Shift+Tab leaves the screen.
              Drop an .apk on it to install it.
            </>
          )}
        </p>
        <ErrorBanner error={error} onDismiss={() => setError(undefined)} />
        {!watchOnly && <RemoteConnectPanel sessionId={sessionId} serial={serial} platform={platform} />}
      </div>
    </section>
  );
}

/** The assistant beside the screen: this phone's newest chat, or a button to start one. */
function PhoneChat({ sessionId, device }: { sessionId: string; device: Device }) {
  const serial = device.info.serial!;
  const chats = useLoad(() => api.chats(sessionId), [sessionId]);
  const create = useAction();
  const chat = (chats.data?.data ?? []).filter((c) => c.metadata.deviceId === serial).at(-1);
  if (chats.loading && !chats.data) return <Spinner label="Loading chats" />;
  if (!chat) {
    return (
      <div className="stack">
        <p className="muted">The assistant drives {device.info.name} for you: “open Settings and tap Wi-Fi”.</p>
        <button type="button" className="primary" disabled={create.pending} onClick={() => void create.run(async () => {
          await api.createChat(sessionId, serial);
          await chats.reload();
        })}>
          Start a chat about {device.info.name}
        </button>
        <ErrorBanner error={create.error ?? chats.error} />
      </div>
    );
  }
  return <ChatView key={chat.id} sessionId={sessionId} chatId={chat.id} inputLabel={`Ask the assistant to do something on ${device.info.name}`} />;
}
