import type { Db } from './db.js';

import type { PhoneState } from '../fleet/types.js';

export type { PhoneState };

export interface FleetDeviceRow {
  serial: string;
  platform: string;
  type: string;
  name: string;
  osVersion: string;
  state: PhoneState;
  battery: number | null;
  /** The provider's name, or null for this workstation's own USB. */
  host: string | null;
  /** The model the phone reports (an iPhone's ProductType), or null before it was read. */
  model?: string | null;
  /** The lab owner's note on the phone, or null. */
  note?: string | null;
  firstSeenAt: number;
  lastSeenAt: number;
}

const COLUMNS = `serial, platform, type, name, os_version AS osVersion, state, battery, host, model, note, first_seen_at AS firstSeenAt,
  last_seen_at AS lastSeenAt`;

/** The inventory: every phone the lab has seen, with its last known state. */
export function fleetStore(db: Db) {
  const all = db.prepare<[], FleetDeviceRow>(`SELECT ${COLUMNS} FROM fleet_devices ORDER BY platform, name, serial`);
  const one = db.prepare<[string], FleetDeviceRow>(`SELECT ${COLUMNS} FROM fleet_devices WHERE serial = ?`);
  const upsert = db.prepare(
    `INSERT INTO fleet_devices (serial, platform, type, name, os_version, state, battery, host, model, first_seen_at, last_seen_at)
     VALUES (@serial, @platform, @type, @name, @osVersion, @state, @battery, @host, @model, @at, @at)
     ON CONFLICT (serial) DO UPDATE SET platform = excluded.platform, type = excluded.type,
       name = CASE WHEN excluded.name = '' THEN name ELSE excluded.name END,
       os_version = CASE WHEN excluded.os_version = '' THEN os_version ELSE excluded.os_version END,
       state = excluded.state, battery = COALESCE(excluded.battery, battery), host = excluded.host, model = COALESCE(excluded.model, model), last_seen_at = excluded.last_seen_at`,
  );
  const setState = db.prepare('UPDATE fleet_devices SET state = ? WHERE serial = ?');
  const setNote = db.prepare('UPDATE fleet_devices SET note = ? WHERE serial = ?');
  const markAllGone = db.prepare("UPDATE fleet_devices SET state = 'gone' WHERE platform = ?");
  const forget = db.prepare("DELETE FROM fleet_devices WHERE serial = ? AND state = 'gone'");
  return {
    all: () => all.all(),
    get: (serial: string) => one.get(serial),
    upsert: (row: Omit<FleetDeviceRow, 'firstSeenAt' | 'lastSeenAt' | 'host' | 'model'> & { host?: string | null; model?: string | null }, at: number) =>
      void upsert.run({ serial: row.serial, platform: row.platform, type: row.type, name: row.name, osVersion: row.osVersion, state: row.state, battery: row.battery, host: row.host ?? null, model: row.model || null, at }),
    setState: (serial: string, state: PhoneState) => void setState.run(state, serial),
    /** Whether the phone is in the inventory (and now has that note, or none). */
    setNote: (serial: string, note: string | null) => setNote.run(note, serial).changes > 0,
    /** On start nothing is known to be attached until the tracker says so. */
    markAllGone: (platform: string) => void markAllGone.run(platform),
    /** Drops a phone that is gone from the inventory: the demo's simulated phones, which never come back. */
    forget: (serial: string) => void forget.run(serial),
  };
}
