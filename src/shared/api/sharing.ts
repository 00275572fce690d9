import { Type, type Static } from 'typebox';
import { DateTime, Nullable, Uuid } from './common.js';
import { DeviceFilter } from './devices.js';

/** Sharing a scarce lab: reservations (the lab's calendar) and who used what. */

export const ReservationBody = Type.Object(
  {
    filters: Type.Array(DeviceFilter, { maxItems: 20, description: 'The allocation filter language; a platform EQUALS filter is required.' }),
    startsAt: DateTime,
    endsAt: DateTime,
    title: Type.Optional(Type.String({ maxLength: 200 })),
  },
  { additionalProperties: false },
);
export type ReservationBody = Static<typeof ReservationBody>;

export const Reservation = Type.Object({
  id: Uuid,
  serial: Type.String(),
  name: Type.String({ description: "The phone's name." }),
  startsAt: DateTime,
  endsAt: DateTime,
  title: Nullable(Type.String()),
  createdBy: Nullable(Uuid),
});
export type Reservation = Static<typeof Reservation>;

/**
 * A slot of the calendar. The caller's own organization's reservations carry their id, title and creator; another
 * organization's show only that the phone is busy.
 */
export const CalendarSlot = Type.Object({
  serial: Type.String(),
  name: Type.String(),
  startsAt: DateTime,
  endsAt: DateTime,
  own: Type.Boolean({ description: "True for the caller's organization's reservations; false for a busy slot of another's." }),
  id: Type.Optional(Uuid),
  title: Type.Optional(Nullable(Type.String())),
  createdBy: Type.Optional(Nullable(Uuid)),
});
export type CalendarSlot = Static<typeof CalendarSlot>;

export const CalendarQuery = Type.Object({
  from: Type.Optional(DateTime),
  to: Type.Optional(DateTime),
});

export const UsageQuery = Type.Object({
  from: Type.Optional(DateTime),
  to: Type.Optional(DateTime),
  groupBy: Type.Optional(Type.Union([Type.Literal('member'), Type.Literal('device')], { default: 'member' })),
});

export const UsageRow = Type.Object({
  key: Type.String({ description: "The member's user id, or the phone's serial." }),
  label: Type.String({ description: "The member's email, or the phone's name." }),
  seconds: Type.Number({ description: 'Device time held in the window, to the millisecond.' }),
  allocations: Type.Integer(),
});
export type UsageRow = Static<typeof UsageRow>;

export const Usage = Type.Object({
  groupBy: Type.Union([Type.Literal('member'), Type.Literal('device')]),
  from: DateTime,
  to: DateTime,
  data: Type.Array(UsageRow),
});
export type Usage = Static<typeof Usage>;

export const LabUsageQuery = Type.Object({ from: Type.Optional(DateTime), to: Type.Optional(DateTime) });

export const LabUsageRow = Type.Object({
  organizationId: Type.String(),
  organization: Type.String({ description: "The organization's name; a Personal organization's carries its owner's email." }),
  serial: Type.String(),
  name: Type.String({ description: "The phone's name." }),
  seconds: Type.Number({ description: 'Device time the organization held on the phone in the window, to the millisecond.' }),
  allocations: Type.Integer(),
});
export type LabUsageRow = Static<typeof LabUsageRow>;

export const LabUsage = Type.Object({ from: DateTime, to: DateTime, data: Type.Array(LabUsageRow) });
export type LabUsage = Static<typeof LabUsage>;
