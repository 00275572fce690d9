import { api, useAuth, useFleet } from '../app-context.js';
import { linkTo } from '../router.js';
import { takePhone } from '../screens/fleet.js';
import { ErrorBanner, fmtTime, useAction, useLoad, useNow } from '../ui.js';

/** The next four weeks are what a person plans around. */
const AHEAD_MS = 28 * 24 * 3600_000;

/** The caller's own bookings from now on, with a cancel button each, and the phone of one that runs now: shown on the sessions screen. */
export function MyBookings() {
  const me = useAuth((s) => s.user?.id);
  // The shell's poll keeps the fleet's list: what a running booking's phone is, to take it.
  const phones = useFleet((s) => s.devices);
  useNow(30_000);
  const now = Date.now();
  const use = useAction();
  const bookings = useLoad(() => api.reservations({ from: new Date().toISOString(), to: new Date(Date.now() + AHEAD_MS).toISOString() }), [], 30_000);
  const cancel = useAction();
  const mine = (bookings.data?.data ?? []).filter((s) => s.own && s.createdBy === me);
  return (
    <section aria-label="Your bookings" className="my-bookings">
      <h2>Your bookings</h2>
      {mine.length === 0 ? (
        <p className="muted">No bookings. <a href="/calendar" onClick={linkTo('/calendar')}>Book a phone in the calendar</a>.</p>
      ) : (
        <ul>
          {mine.map((s) => (
            <li key={s.id}>
              <strong>{s.name}</strong> {fmtTime(s.startsAt)} to {fmtTime(s.endsAt)}{s.title && <> · {s.title}</>}{' '}
              {Date.parse(s.startsAt) <= now && now < Date.parse(s.endsAt) && phones.some((p) => p.serial === s.serial) && (
                <button type="button" className="link" disabled={use.pending} onClick={() => void use.run(() => takePhone(phones.find((p) => p.serial === s.serial)!))}>Use it now</button>
              )}
              <button type="button" className="link danger" disabled={cancel.pending} onClick={() => void cancel.run(async () => {
                await api.cancelReservation(s.id!);
                await bookings.reload();
              })}>Cancel</button>
            </li>
          ))}
        </ul>
      )}
      <ErrorBanner error={bookings.error ?? cancel.error ?? use.error} />
    </section>
  );
}
