import type { Db } from './db.js';

export interface ReservationRow {
  id: string;
  organizationId: string;
  serial: string;
  startsAt: number;
  endsAt: number;
  title: string | null;
  createdBy: string | null;
  createdAt: number;
}

const COLUMNS = `id, organization_id AS organizationId, serial, starts_at AS startsAt, ends_at AS endsAt, title,
  created_by AS createdBy, created_at AS createdAt`;

/** Booked windows on phones: the lab's calendar. Windows on one phone never overlap (the service checks before insert). */
export function reservationStore(db: Db) {
  const byId = db.prepare<[string], ReservationRow>(`SELECT ${COLUMNS} FROM reservations WHERE id = ?`);
  const overlapping = db.prepare<[number, number], ReservationRow>(
    `SELECT ${COLUMNS} FROM reservations WHERE starts_at < ? AND ends_at > ? ORDER BY starts_at, serial`,
  );
  const onPhone = db.prepare<[string, number, number], { n: number }>(
    'SELECT count(*) AS n FROM reservations WHERE serial = ? AND starts_at < ? AND ends_at > ?',
  );
  // What is running now: read on every assignment, so it must stay cheap with a long calendar (the start index).
  const runningAt = db.prepare<[number, number], { serial: string; organizationId: string }>(
    'SELECT serial, organization_id AS organizationId FROM reservations WHERE starts_at <= ? AND ends_at > ?',
  );
  const startingWithin = db.prepare<[number, number], ReservationRow>(
    `SELECT ${COLUMNS} FROM reservations WHERE starts_at > ? AND starts_at <= ? ORDER BY starts_at`,
  );
  const boundaries = db.prepare<[number, number, number, number], { n: number }>(
    'SELECT (SELECT count(*) FROM reservations WHERE starts_at > ? AND starts_at <= ?) + (SELECT count(*) FROM reservations WHERE ends_at > ? AND ends_at <= ?) AS n',
  );
  const insert = db.prepare(
    `INSERT INTO reservations (id, organization_id, serial, starts_at, ends_at, title, created_by, created_at)
     VALUES (@id, @organizationId, @serial, @startsAt, @endsAt, @title, @createdBy, @createdAt)`,
  );
  const remove = db.prepare('DELETE FROM reservations WHERE id = ?');
  return {
    get: (id: string) => byId.get(id),
    /** Every reservation whose window meets [from, to), earliest first. */
    overlapping: (from: number, to: number) => overlapping.all(to, from),
    /** Whether the phone has a reservation whose window meets [from, to). */
    phoneBusy: (serial: string, from: number, to: number) => onPhone.get(serial, to, from)!.n > 0,
    /** Each phone reserved at this moment, and by which organization. */
    runningAt: (at: number) => new Map(runningAt.all(at, at).map((r) => [r.serial, r.organizationId])),
    /** Reservations that start after `from` and by `to`: the ones whose phone's holder is warned. */
    startingWithin: (from: number, to: number) => startingWithin.all(from, to),
    /** How many windows started or ended after `from` and by `to`: who may have their phones changed. */
    boundariesWithin: (from: number, to: number) => boundaries.get(from, to, from, to)!.n,
    insert: (row: ReservationRow) => void insert.run(row),
    delete: (id: string) => remove.run(id).changes === 1,
  };
}
