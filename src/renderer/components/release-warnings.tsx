import type { FleetDevice } from '../../shared/api/devices.js';
import { useEffect } from 'react';
import { api, fleetStore, useFleet } from '../app-context.js';
import { ErrorBanner, fmtDuration, fmtTime, useAction, useNow } from '../ui.js';

/** How often the shell looks for phones the lab is about to take back: well within the minute's warning. */
const WARNINGS_POLL_MS = 3000;

/** "Released in 12:30 unless used": a held phone's idle deadline, counting down. Nothing while idle release is off. */
export function IdleCountdown({ at }: { at: string | null | undefined }) {
  const now = useNow(1000);
  if (!at) return null;
  return <span className="muted idle-countdown" title={`Released at ${fmtTime(at)} unless someone uses it`}>released in {fmtDuration(Date.parse(at) - now)} unless used</span>;
}

function Warning({ phone, onKept }: { phone: FleetDevice; onKept(): void }) {
  const now = useNow(1000);
  const keep = useAction();
  const { heldBy } = phone;
  const warning = heldBy!.releaseWarning!;
  const left = fmtDuration(Date.parse(warning.releaseAt) - now);
  return (
    <div className="release-warning" role="alert" aria-label={`${phone.name} will be released`}>
      {warning.reason === 'idle_timeout' ? (
        <>
          <span><strong>{phone.name}</strong> has been idle: it goes back to the lab in <strong>{left}</strong>.</span>
          <button
            type="button"
            className="primary"
            disabled={keep.pending}
            onClick={() => void keep.run(async () => {
              await api.keepDevice(heldBy!.sessionId, phone.serial);
              onKept();
            })}
          >
            Keep {phone.name}
          </button>
        </>
      ) : (
        <span><strong>{phone.name}</strong> is reserved by another team from {fmtTime(warning.releaseAt)}: it will be released in <strong>{left}</strong>.</span>
      )}
      <ErrorBanner error={keep.error} />
    </div>
  );
}

/**
 * The holder's warning, on every screen: a phone of this organization that the lab will release soon (idle, or
 * reserved by another organization), with a button that keeps an idle one.
 */
export function ReleaseWarnings() {
  // The fleet store's list, polled: on the Fleet screen, its own poll and this one share each request (one list of a
  // hundred phones asked for at a time, and the page's first one asked for before the app runs).
  const devices = useFleet((s) => s.devices);
  useEffect(() => fleetStore.getState().poll(WARNINGS_POLL_MS), []);
  const now = useNow(1000);
  // A release that is past is over: the next poll shows the phone gone back, so its warning is not left counting 0:00.
  const warned = devices.filter((p) => p.heldBy?.releaseWarning && Date.parse(p.heldBy.releaseWarning.releaseAt) > now - 1000);
  if (warned.length === 0) return null;
  return (
    <section className="release-warnings" aria-label="Phones about to be released">
      {warned.map((p) => <Warning key={p.serial} phone={p} onKept={() => void fleetStore.getState().refresh()} />)}
    </section>
  );
}
