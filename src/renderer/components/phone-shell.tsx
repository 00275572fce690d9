import { lazy, Suspense } from 'react';
import { api } from '../app-context.js';
import { Spinner } from '../ui.js';

// xterm.js, as for a Mac instance's terminal (instances-panel.tsx): it loads when a shell is first opened, not with
// every session.
const SocketTerminal = lazy(() => import('./terminal.js').then((m) => ({ default: m.SocketTerminal })));

const CLOSE_REASONS: Record<number, string> = {
  1000: 'The shell exited. Open the Shell tab again for a new one.',
  4001: 'The phone was released.',
  4002: 'The phone went offline.',
  1011: 'The connection to the phone was lost.',
  1001: 'Benchtop is shutting down.',
};

/** `adb shell` on the phone, in a terminal: Android only, since iOS runs no shell for a connected computer. */
export function PhoneShell({ sessionId, serial, name, platform }: { sessionId: string; serial: string; name: string; platform: string }) {
  if (platform === 'ios') {
    return (
      <p className="muted">
        An iPhone has no shell: iOS runs none for a connected computer, and its developer services (installing apps,
        syslog, screenshots) do not include one. Use the Syslog tab for its log, and Xcode or <code>idevice*</code> tools
        from the remote connection for the rest.
      </p>
    );
  }
  return (
    <div className="stack">
      <p className="muted">The phone's shell, as <code>adb shell</code> gives it: typing goes to the phone, and so do Ctrl+C and Tab.</p>
      <Suspense fallback={<Spinner label="Loading the terminal" />}>
        <SocketTerminal label={`Shell on ${name}`} connect={(size) => api.shellSocket(sessionId, serial, size)} closeReasons={CLOSE_REASONS} />
      </Suspense>
    </div>
  );
}
