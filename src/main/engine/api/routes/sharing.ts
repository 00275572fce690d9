import { Type } from 'typebox';
import { List, Uuid } from '../../../../shared/api/common.js';
import { Device } from '../../../../shared/api/sessions.js';
import { CalendarQuery, CalendarSlot, Reservation, ReservationBody, Usage, UsageQuery } from '../../../../shared/api/sharing.js';
import type { IdleRelease } from '../../services/idle-release.js';
import type { Reservations } from '../../services/reservations.js';
import type { UsageReport } from '../../services/usage.js';
import { BEARER, OrganizationHeader, responses, scopeOf, type App } from '../http.js';
import { list } from '../presenters/common.js';
import { presentDevice } from '../presenters/sessions.js';
import { presentReservation, presentSlot, presentUsage, usageCsv } from '../presenters/sharing.js';
import { DeviceParams } from './devices.js';

const ReservationParams = Type.Object({ id: Uuid });
const time = (value: string | undefined) => (value === undefined ? undefined : Date.parse(value));

/** Sharing a scarce lab: keeping a held phone, reservations (the calendar), and who used what. Extensions. */
export function sharingRoutes(app: App, services: { idleRelease: IdleRelease; reservations: Reservations; usage: UsageReport }): void {
  const tags = ['Extensions'];
  const { idleRelease, reservations, usage } = services;

  app.post('/sessions/:sessionId/devices/:deviceId/keep', {
    schema: { tags, operationId: 'keepDevice', summary: 'Keep a held phone: counts as activity, so its idle release starts over', security: BEARER, headers: OrganizationHeader, params: DeviceParams, response: responses({ 200: Device }, [401, 403, 404]) },
  }, (req) => presentDevice(idleRelease.keep(scopeOf(req), req.params.sessionId, req.params.deviceId)));

  app.post('/reservations', {
    schema: {
      tags, operationId: 'createReservation', summary: 'Reserve a phone that matches the filters for a window',
      description: '409 no_free_slot when no phone that matches is free for the whole window; 400 window_in_past, window_inverted or window_too_long (the lab setting reservationMaxHours).',
      security: BEARER, headers: OrganizationHeader, body: ReservationBody, response: responses({ 201: Reservation }, [400, 401, 403, 409]),
    },
  }, (req, reply) => {
    const { filters, startsAt, endsAt, title } = req.body;
    const row = reservations.create(scopeOf(req), { filters, startsAt: Date.parse(startsAt), endsAt: Date.parse(endsAt), title });
    const [slot] = reservations.calendar(scopeOf(req), row.startsAt, row.endsAt).filter((s) => s.row.id === row.id);
    return reply.code(201).send(presentReservation(row, slot?.name ?? ''));
  });

  app.get('/reservations', {
    schema: {
      tags, operationId: 'listReservations', summary: "The lab's calendar: reservations whose window meets [from, to) (default: the next 7 days)",
      description: "Another organization's reservations appear as busy slots: the phone and the window only.",
      security: BEARER, headers: OrganizationHeader, querystring: CalendarQuery, response: responses({ 200: List(CalendarSlot) }, [400, 401, 403]),
    },
  }, (req) => list(reservations.calendar(scopeOf(req), time(req.query.from), time(req.query.to)).map(presentSlot)));

  app.delete('/reservations/:id', {
    schema: { tags, operationId: 'deleteReservation', summary: 'Cancel a reservation (its creator, or an admin of its organization)', security: BEARER, headers: OrganizationHeader, params: ReservationParams, response: responses({ 204: Type.Null() }, [401, 403, 404]) },
  }, (req, reply) => {
    reservations.remove(scopeOf(req), req.params.id);
    return reply.code(204).send();
  });

  app.get('/usage', {
    schema: {
      tags, operationId: 'getUsage', summary: 'Device time held per member or per phone in a window (default: the last 30 days)',
      description: 'JSON, or CSV when asked with Accept: text/csv.',
      security: BEARER, headers: OrganizationHeader, querystring: UsageQuery,
      response: {
        ...responses({}, [400, 401, 403]),
        200: { description: 'The usage report', content: { 'application/json': { schema: Usage }, 'text/csv': { schema: Type.String() } } },
      },
    },
  }, (req, reply) => {
    const { from, to, groupBy } = req.query;
    const report = presentUsage(usage.devices(scopeOf(req), { from: time(from), to: time(to), groupBy }));
    if (wantsCsv(req.headers.accept)) {
      const name = `benchtop-usage-by-${report.groupBy}.csv`;
      reply.type('text/csv; charset=utf-8').header('content-disposition', `attachment; filename="${name}"`);
      return usageCsv(report);
    }
    return report;
  });
}

/** CSV only when the client prefers it to JSON (a browser's Accept lists neither first). */
function wantsCsv(accept: string | undefined): boolean {
  if (!accept) return false;
  const types = accept.split(',').map((t) => t.split(';')[0]!.trim().toLowerCase());
  const csv = types.indexOf('text/csv');
  const json = types.indexOf('application/json');
  return csv !== -1 && (json === -1 || csv < json);
}
