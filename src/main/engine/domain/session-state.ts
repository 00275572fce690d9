import { conflict } from './errors.js';

/** Allocating into an ended session is a conflict with its state: it holds nothing new. */
export function refuseIfEnded(session: { endedAt: number | null }): void {
  if (session.endedAt !== null) throw conflict('session_ended', 'That session has ended; start a new session to take a phone or a Mac.');
}
