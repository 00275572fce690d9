import { useEffect, useRef, useState, type FormEvent } from 'react';
import type { FleetDevice } from '../../shared/api/devices.js';
import type { CalendarSlot } from '../../shared/api/sharing.js';
import { api, useAuth } from '../app-context.js';
import { DeviceFilters, type Filter } from '../components/device-filters.js';
import { Empty, ErrorBanner, Page, Spinner, useAction, useLoad, useNow } from '../ui.js';
import { hhmm, takePhone } from './fleet.js';

const HOUR_MS = 3600_000;
const DAY_MS = 24 * HOUR_MS;
const HOURS = Array.from({ length: 24 }, (_, h) => h);
const CALENDAR_POLL_MS = 10_000;
/** The narrowest a booking is drawn, an hour's narrowest cell: room for its ▶ and its × (styles.css, .slot). */
const MIN_SLOT_PX = 40;
/** The phone names' column (styles.css, .calendar-row). */
const PHONE_COLUMN_PX = 160;
/** A time typed into the form: the 24-hour clock the grid is labelled in, whatever the browser's locale. */
const TIME = /^([01]\d|2[0-3]):[0-5]\d$/;

const startOfDay = (ms: number) => {
  const d = new Date(ms);
  d.setHours(0, 0, 0, 0);
  return d.getTime();
};
const hh = (h: number) => `${String(h).padStart(2, '0')}:00`;
/** A date input's value, in local time. */
const localDate = (ms: number) => {
  const d = new Date(ms);
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
};
/** The browser's time zone, which the grid and the form are in, and its offset from UTC now ("Europe/Berlin, UTC+01:00"). */
export function timeZoneLabel(at = new Date()): string {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const minutes = -at.getTimezoneOffset();
  const abs = Math.abs(minutes);
  const offset = `UTC${minutes < 0 ? '−' : '+'}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
  return zone ? `${zone}, ${offset}` : offset;
}

/** A line at the current time across today's rows, under the phone names when the day scrolls; drawn again each half minute. */
function NowLine({ day }: { day: number }) {
  useNow(30_000);
  const now = Date.now();
  if (now < day || now >= day + DAY_MS) return null;
  const share = (now - day) / DAY_MS;
  const time = hhmm(new Date(now).toISOString());
  return (
    <div className="calendar-now" style={{ left: `calc(${PHONE_COLUMN_PX}px + (100% - ${PHONE_COLUMN_PX}px) * ${share})` }} title={`Now, ${time}`} aria-hidden="true">
      <span className="calendar-now-label">{time}</span>
    </div>
  );
}

const running = (slot: CalendarSlot, now: number) => Date.parse(slot.startsAt) <= now && now < Date.parse(slot.endsAt);

/**
 * What a drag on a phone's row books: that phone, by its serial (of two like phones, the one whose row it was), with
 * its name and version to read in the form. Removing the serial's row books any phone like it that is free then.
 */
const filtersFor = (phone: FleetDevice): Filter[] => [
  { attribute: 'platform', operator: 'EQUALS', value: phone.platform },
  { attribute: 'name', operator: 'EQUALS', value: phone.name },
  ...(phone.osVersion ? [{ attribute: 'version', operator: 'EQUALS', value: phone.osVersion }] : []),
  { attribute: 'serial', operator: 'EQUALS', value: phone.serial },
];

interface Draft {
  filters: Filter[];
  startsAt: number;
  endsAt: number;
}

/** The form books by filters, in the grid's words and clock: a day, and From and To on the 24-hour clock. */
function BookingForm({ draft, onDone, onCancel }: { draft: Draft; onDone(): void; onCancel(): void }) {
  const [filters, setFilters] = useState(draft.filters);
  const [day, setDay] = useState(localDate(draft.startsAt));
  const [from, setFrom] = useState(hhmm(new Date(draft.startsAt).toISOString()));
  const [to, setTo] = useState(hhmm(new Date(draft.endsAt).toISOString()));
  const [title, setTitle] = useState('');
  const book = useAction();
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (!TIME.test(from) || !TIME.test(to)) return book.setError('From and To are times on the 24-hour clock, such as 09:00 or 14:30.');
    const startsAt = new Date(`${day}T${from}`).getTime();
    let endsAt = new Date(`${day}T${to}`).getTime();
    // A To at or before From is the next day's: 22:00 to 02:00 is a night.
    if (endsAt <= startsAt) endsAt += DAY_MS;
    const body = {
      filters: filters.filter((f, i) => i === 0 || f.value.trim() !== '').map((f) => ({ ...f, value: f.value.trim() })),
      startsAt: new Date(startsAt).toISOString(),
      endsAt: new Date(endsAt).toISOString(),
      ...(title.trim() ? { title: title.trim() } : {}),
    };
    if ((await book.run(() => api.reserve(body))) !== undefined) onDone();
  };
  const time = { inputMode: 'numeric' as const, pattern: TIME.source.slice(1, -1), placeholder: 'HH:MM', size: 5, maxLength: 5, required: true, 'aria-describedby': 'booking-clock' };
  return (
    <form className="card booking" aria-label="Book a phone" onSubmit={(e) => void submit(e)}>
      <DeviceFilters filters={filters} onChange={setFilters} />
      <div className="button-row">
        <label>Day <input type="date" value={day} required onChange={(e) => setDay(e.target.value)} /></label>
        <label>From <input {...time} value={from} onChange={(e) => setFrom(e.target.value)} /></label>
        <label>To <input {...time} value={to} onChange={(e) => setTo(e.target.value)} /></label>
        <label>Title <input value={title} maxLength={200} placeholder="e.g. release candidate run" onChange={(e) => setTitle(e.target.value)} /></label>
      </div>
      <p id="booking-clock" className="muted">Times are on the 24-hour clock, as in the calendar; a To before From ends the next day.</p>
      <div className="button-row">
        <button type="submit" className="primary" disabled={book.pending}>Book</button>
        <button type="button" onClick={onCancel}>Cancel</button>
      </div>
      <ErrorBanner error={book.error} onDismiss={() => book.setError(undefined)} />
    </form>
  );
}

/**
 * A booking, drawn inside the grid cell of the hour it starts in and as wide as its hours (so that the grid's rows
 * hold only cells). The caller's own booking names itself; while it runs, it offers the phone; its creator can cancel it.
 */
function Slot({ slot, day, phone, onCancelled }: { slot: CalendarSlot; day: number; phone: FleetDevice; onCancelled(): void }) {
  const cancel = useAction();
  const use = useAction();
  const me = useAuth((s) => s.user?.id);
  // Drawn again every half minute, and read afresh each time: a booking made a moment ago may run already.
  useNow(30_000);
  const now = Date.now();
  const from = Math.max(Date.parse(slot.startsAt), day);
  const to = Math.min(Date.parse(slot.endsAt), day + DAY_MS);
  const offset = (from - day) % HOUR_MS;
  // 1 px short of its hours, so that the hour line after it shows. A booking of a few minutes is still drawn wide
  // enough for its ▶ and ×, and a short one in the day's last hour then ends at 24:00 rather than past it (a booking
  // made at 23:14 left its ▶ no width at all). Percentages are of the hour's cell, which the slot is drawn in.
  const dayEnd = ((day + DAY_MS - (from - offset)) / HOUR_MS) * 100;
  const style = {
    left: `min(${(offset / HOUR_MS) * 100}%, calc(${dayEnd}% - ${MIN_SLOT_PX}px))`,
    width: `max(calc(${((to - from) / HOUR_MS) * 100}% - 1px), ${MIN_SLOT_PX - 1}px)`,
  };
  const when = `${hhmm(slot.startsAt)}–${hhmm(slot.endsAt)}`;
  const stop = (e: React.PointerEvent) => e.stopPropagation();
  if (!slot.own) return <span className="slot busy" style={style} title={`Reserved by another team, ${when}`} onPointerDown={stop}>busy</span>;
  const name = slot.title ?? 'Booked';
  return (
    <span className="slot own" style={style} title={`${name}, ${when}`} onPointerDown={stop}>
      {running(slot, now) ? (
        // The booking's own name, marked as something to start: a one-hour block has no room for more words.
        <button type="button" className="link slot-use" aria-label={`Use ${phone.name} now (booked ${when}): ${name}`} title={`Use ${phone.name} now`} disabled={use.pending} onClick={() => void use.run(() => takePhone(phone))}>
          <span aria-hidden="true" className="slot-play">▶</span><span className="slot-name">{name}</span>
        </button>
      ) : <span className="slot-title">{name}</span>}
      {slot.createdBy === me && (
        <button type="button" className="link slot-cancel" aria-label={`Cancel ${slot.title ?? 'booking'} ${when}`} disabled={cancel.pending}
          onClick={() => void cancel.run(async () => {
            await api.cancelReservation(slot.id!);
            onCancelled();
          })}>×</button>
      )}
      {(use.error ?? cancel.error) && <span role="alert" className="visually-hidden">{use.error ?? cancel.error}</span>}
    </span>
  );
}

/** The caller's bookings that run now, each with the phone a click away: a booking is there to be used. */
function RunningNow({ slots, phones }: { slots: CalendarSlot[]; phones: FleetDevice[] }) {
  useNow(30_000);
  const now = Date.now();
  const use = useAction();
  const mine = slots.filter((s) => s.own && running(s, now));
  if (mine.length === 0) return null;
  return (
    <section className="card running-bookings" aria-label="Booked for you now">
      <ul>
        {mine.map((s) => {
          const phone = phones.find((p) => p.serial === s.serial);
          return (
            <li key={s.id ?? s.startsAt}>
              <strong>{s.name}</strong> is booked for you now, {hhmm(s.startsAt)}–{hhmm(s.endsAt)}{s.title && <> · {s.title}</>}{' '}
              {phone && <button type="button" className="primary" disabled={use.pending} onClick={() => void use.run(() => takePhone(phone))}>Use it now</button>}
            </li>
          );
        })}
      </ul>
      <ErrorBanner error={use.error} onDismiss={() => use.setError(undefined)} />
    </section>
  );
}

/**
 * The lab's calendar: phones as rows, the hours of one day as columns. Dragging across a phone's hours books it;
 * the form books by filters. Another team's bookings are busy slots, nothing more.
 */
export function CalendarScreen() {
  const [day, setDay] = useState(() => startOfDay(Date.now()));
  const [drag, setDrag] = useState<{ serial: string; from: number; to: number }>();
  const [draft, setDraft] = useState<Draft>();
  const fleet = useLoad(() => api.fleetDevices(), [], CALENDAR_POLL_MS);
  const slots = useLoad(() => api.reservations({ from: new Date(day).toISOString(), to: new Date(day + DAY_MS).toISOString() }), [day], CALENDAR_POLL_MS);
  const phones = fleet.data?.data ?? [];
  const all = slots.data?.data ?? [];
  // Today opens at the hour before now, where a narrow window would otherwise show the night: the day scrolls from there.
  const scroller = useRef<HTMLDivElement>(null);
  const shown = Boolean(fleet.data);
  useEffect(() => {
    const el = scroller.current;
    if (!el || day !== startOfDay(Date.now())) return;
    const hourWidth = (el.scrollWidth - PHONE_COLUMN_PX) / 24;
    el.scrollLeft = Math.max(0, new Date().getHours() - 1) * hourWidth;
  }, [day, shown]);

  const endDrag = (phone: FleetDevice) => {
    if (!drag || drag.serial !== phone.serial) return;
    const [a, b] = [Math.min(drag.from, drag.to), Math.max(drag.from, drag.to)];
    setDrag(undefined);
    setDraft({ filters: filtersFor(phone), startsAt: day + a * HOUR_MS, endsAt: day + (b + 1) * HOUR_MS });
  };
  const selected = (serial: string, h: number) =>
    drag?.serial === serial && h >= Math.min(drag.from, drag.to) && h <= Math.max(drag.from, drag.to);
  const booked = () => {
    setDraft(undefined);
    void slots.reload();
  };
  /** The booking drawn in a phone's hour: the one that starts in it, or that runs into the day from before it. */
  const startingIn = (serial: string, h: number) =>
    all.find((s) => s.serial === serial && Math.floor((Math.max(Date.parse(s.startsAt), day) - day) / HOUR_MS) === h);
  // The next full hour, on the day shown.
  const nextHour = Math.ceil(Date.now() / HOUR_MS) * HOUR_MS;
  const firstHour = day + (nextHour - startOfDay(nextHour));

  return (
    <Page
      title="Calendar"
      actions={<button type="button" className="primary" onClick={() => setDraft({ filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }], startsAt: firstHour, endsAt: firstHour + HOUR_MS })}>Book a phone</button>}
    >
      <div className="button-row calendar-nav">
        <button type="button" onClick={() => setDay(startOfDay(day - DAY_MS / 2))}>Previous day</button>
        <button type="button" onClick={() => setDay(startOfDay(Date.now()))}>Today</button>
        <button type="button" onClick={() => setDay(startOfDay(day + DAY_MS * 1.5))}>Next day</button>
        <strong aria-live="polite">{new Date(day).toLocaleDateString([], { weekday: 'long', year: 'numeric', month: 'long', day: 'numeric' })}</strong>
        <span className="muted">Times in {timeZoneLabel(new Date(day + DAY_MS / 2))}</span>
      </div>
      {draft && <BookingForm key={`${draft.startsAt}-${draft.filters.map((f) => f.value).join()}`} draft={draft} onDone={booked} onCancel={() => setDraft(undefined)} />}
      <RunningNow slots={all} phones={phones} />
      <ErrorBanner error={fleet.error ?? slots.error} />
      {fleet.loading && !fleet.data && <Spinner label="Loading the calendar" />}
      {fleet.data && phones.length === 0 ? <Empty>No phones in the lab yet.</Empty> : (
        // The day is wider than a laptop's window: it scrolls sideways, the phone names staying in view.
        <div ref={scroller} className="calendar-scroll" role="region" aria-label="Reservations, from 00:00 to 24:00" tabIndex={0}>
          <div className="calendar-day">
          <div className="calendar" role="grid" aria-label="Reservations" onPointerLeave={() => setDrag(undefined)}>
            <div className="calendar-row calendar-head" role="row">
              <div className="calendar-phone" role="columnheader">Phone</div>
              {HOURS.map((h) => <div key={h} role="columnheader" className="calendar-hour">{hh(h)}</div>)}
            </div>
            {phones.map((phone) => (
              <div key={phone.serial} className="calendar-row" role="row" aria-label={phone.name} onPointerUp={() => endDrag(phone)}>
                <div className="calendar-phone" role="rowheader">{phone.name} <span className="muted">{phone.osVersion}</span></div>
                {HOURS.map((h) => {
                  const slot = startingIn(phone.serial, h);
                  const what = slot ? `, ${slot.own ? slot.title ?? 'booked' : 'busy'} ${hhmm(slot.startsAt)}–${hhmm(slot.endsAt)}` : '';
                  return (
                    <div
                      key={h}
                      role="gridcell"
                      aria-label={`${phone.name} at ${hh(h)}${what}`}
                      aria-selected={selected(phone.serial, h)}
                      className="calendar-hour"
                      onPointerDown={(e) => {
                        e.preventDefault();
                        setDrag({ serial: phone.serial, from: h, to: h });
                      }}
                      onPointerEnter={() => drag?.serial === phone.serial && setDrag({ ...drag, to: h })}
                    >
                      {slot && <Slot slot={slot} day={day} phone={phone} onCancelled={() => void slots.reload()} />}
                    </div>
                  );
                })}
              </div>
            ))}
          </div>
          <NowLine day={day} />
          </div>
        </div>
      )}
    </Page>
  );
}
