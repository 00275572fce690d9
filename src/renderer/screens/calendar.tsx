import { useState, type FormEvent } from 'react';
import type { FleetDevice } from '../../shared/api/devices.js';
import type { CalendarSlot } from '../../shared/api/sharing.js';
import { api, useAuth } from '../app-context.js';
import { DeviceFilters, type Filter } from '../components/device-filters.js';
import { Empty, ErrorBanner, Page, Spinner, useAction, useLoad } from '../ui.js';

const HOUR_MS = 3600_000;
const DAY_MS = 24 * HOUR_MS;
const HOURS = Array.from({ length: 24 }, (_, h) => h);
const CALENDAR_POLL_MS = 10_000;

const startOfDay = (ms: number) => {
  const d = new Date(ms);
  d.setHours(0, 0, 0, 0);
  return d.getTime();
};
const hh = (h: number) => `${String(h).padStart(2, '0')}:00`;
/** 24-hour local time, as the columns are labelled, whatever the browser's locale. */
const clock = (iso: string) => {
  const d = new Date(iso);
  return `${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}`;
};
/** A datetime-local input's value, in local time. */
const localInput = (ms: number) => {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60_000);
  return d.toISOString().slice(0, 16);
};

/** The filters that name one phone: what a drag on its row books (the engine picks a phone that matches and is free). */
const filtersFor = (phone: FleetDevice): Filter[] => [
  { attribute: 'platform', operator: 'EQUALS', value: phone.platform },
  { attribute: 'name', operator: 'EQUALS', value: phone.name },
  ...(phone.osVersion ? [{ attribute: 'version', operator: 'EQUALS', value: phone.osVersion }] : []),
];

interface Draft {
  filters: Filter[];
  startsAt: number;
  endsAt: number;
}

function BookingForm({ draft, onDone, onCancel }: { draft: Draft; onDone(): void; onCancel(): void }) {
  const [filters, setFilters] = useState(draft.filters);
  const [startsAt, setStartsAt] = useState(localInput(draft.startsAt));
  const [endsAt, setEndsAt] = useState(localInput(draft.endsAt));
  const [title, setTitle] = useState('');
  const book = useAction();
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const body = {
      filters: filters.filter((f, i) => i === 0 || f.value.trim() !== '').map((f) => ({ ...f, value: f.value.trim() })),
      startsAt: new Date(startsAt).toISOString(),
      endsAt: new Date(endsAt).toISOString(),
      ...(title.trim() ? { title: title.trim() } : {}),
    };
    if ((await book.run(() => api.reserve(body))) !== undefined) onDone();
  };
  return (
    <form className="card booking" aria-label="Book a phone" onSubmit={(e) => void submit(e)}>
      <DeviceFilters filters={filters} onChange={setFilters} />
      <div className="button-row">
        <label>From <input type="datetime-local" aria-label="Starts at" value={startsAt} required onChange={(e) => setStartsAt(e.target.value)} /></label>
        <label>To <input type="datetime-local" aria-label="Ends at" value={endsAt} required onChange={(e) => setEndsAt(e.target.value)} /></label>
        <label>Title <input aria-label="Title" value={title} maxLength={200} placeholder="e.g. release candidate run" onChange={(e) => setTitle(e.target.value)} /></label>
      </div>
      <div className="button-row">
        <button type="submit" className="primary" disabled={book.pending}>Book</button>
        <button type="button" onClick={onCancel}>Cancel</button>
      </div>
      <ErrorBanner error={book.error} onDismiss={() => book.setError(undefined)} />
    </form>
  );
}

function Slot({ slot, day, onCancelled }: { slot: CalendarSlot; day: number; onCancelled(): void }) {
  const cancel = useAction();
  const me = useAuth((s) => s.user?.id);
  const from = Math.max(Date.parse(slot.startsAt), day);
  const to = Math.min(Date.parse(slot.endsAt), day + DAY_MS);
  const style = { left: `${((from - day) / DAY_MS) * 100}%`, width: `${((to - from) / DAY_MS) * 100}%` };
  const when = `${clock(slot.startsAt)}–${clock(slot.endsAt)}`;
  if (!slot.own) return <div className="slot busy" style={style} aria-label={`Busy ${when}`} title={`Reserved by another team, ${when}`}>busy</div>;
  return (
    <div className="slot own" style={style} aria-label={`${slot.title ?? 'Booked'} ${when}`} title={`${slot.title ?? 'Booked'}, ${when}`}>
      <span>{slot.title ?? 'booked'}</span>
      {slot.createdBy === me && (
        <button type="button" className="link" aria-label={`Cancel ${slot.title ?? 'booking'} ${when}`} disabled={cancel.pending}
          onClick={() => void cancel.run(async () => {
            await api.cancelReservation(slot.id!);
            onCancelled();
          })}>×</button>
      )}
    </div>
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

  return (
    <Page
      title="Calendar"
      actions={<button type="button" className="primary" onClick={() => setDraft({ filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }], startsAt: Date.now() + HOUR_MS, endsAt: Date.now() + 2 * HOUR_MS })}>Book a phone</button>}
    >
      <div className="button-row calendar-nav">
        <button type="button" onClick={() => setDay(startOfDay(day - DAY_MS / 2))}>Previous day</button>
        <button type="button" onClick={() => setDay(startOfDay(Date.now()))}>Today</button>
        <button type="button" onClick={() => setDay(startOfDay(day + DAY_MS * 1.5))}>Next day</button>
        <strong aria-live="polite">{new Date(day).toLocaleDateString([], { weekday: 'long', year: 'numeric', month: 'long', day: 'numeric' })}</strong>
      </div>
      {draft && <BookingForm key={`${draft.startsAt}-${draft.filters.map((f) => f.value).join()}`} draft={draft} onDone={booked} onCancel={() => setDraft(undefined)} />}
      <ErrorBanner error={fleet.error ?? slots.error} />
      {fleet.loading && !fleet.data && <Spinner label="Loading the calendar" />}
      {fleet.data && phones.length === 0 ? <Empty>No phones in the lab yet.</Empty> : (
        <div className="calendar" role="grid" aria-label="Reservations" onPointerLeave={() => setDrag(undefined)}>
          <div className="calendar-row calendar-head" role="row">
            <div className="calendar-phone" role="columnheader">Phone</div>
            <div className="calendar-hours">{HOURS.map((h) => <div key={h} role="columnheader" className="calendar-hour">{hh(h)}</div>)}</div>
          </div>
          {phones.map((phone) => (
            <div key={phone.serial} className="calendar-row" role="row" aria-label={phone.name}>
              <div className="calendar-phone" role="rowheader">{phone.name} <span className="muted">{phone.osVersion}</span></div>
              <div className="calendar-hours" onPointerUp={() => endDrag(phone)}>
                {HOURS.map((h) => (
                  <div
                    key={h}
                    role="gridcell"
                    aria-label={`${phone.name} at ${hh(h)}`}
                    aria-selected={selected(phone.serial, h)}
                    className="calendar-hour"
                    onPointerDown={(e) => {
                      e.preventDefault();
                      setDrag({ serial: phone.serial, from: h, to: h });
                    }}
                    onPointerEnter={() => drag?.serial === phone.serial && setDrag({ ...drag, to: h })}
                  />
                ))}
                {(slots.data?.data ?? []).filter((s) => s.serial === phone.serial).map((s) => (
                  <Slot key={`${s.startsAt}-${s.id ?? ''}`} slot={s} day={day} onCancelled={() => void slots.reload()} />
                ))}
              </div>
            </div>
          ))}
        </div>
      )}
    </Page>
  );
}
