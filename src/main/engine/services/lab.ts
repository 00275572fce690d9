import { forbidden } from '../domain/errors.js';
import type { UserRow } from '../store/users.js';
import { requireInteractive } from './auth.js';
import type { Caller, EngineContext } from './context.js';

export const OWNER_SETTING = 'owner_user_id';
const SIGNUP_OPEN = 'signup_open';

export const labOwnerId = (ctx: EngineContext) => ctx.stores.settings.get(OWNER_SETTING);
export const isSignupOpen = (ctx: EngineContext) => ctx.stores.settings.get(SIGNUP_OPEN) !== 'false';

export function labSettings(ctx: EngineContext) {
  return { signupOpen: isSignupOpen(ctx) };
}

export function updateLabSettings(ctx: EngineContext, patch: { signupOpen?: boolean }) {
  if (patch.signupOpen !== undefined) ctx.stores.settings.set(SIGNUP_OPEN, String(patch.signupOpen));
  return labSettings(ctx);
}

export function isLabOwner(ctx: EngineContext, user: UserRow): boolean {
  return labOwnerId(ctx) === user.id;
}

/** Lab administration is for the lab owner (the first account), signed in interactively. */
export function requireLabOwner(ctx: EngineContext, caller: Caller): void {
  requireInteractive(caller);
  if (!isLabOwner(ctx, caller.user)) throw forbidden('not_lab_owner', 'Only the lab owner can change lab settings.');
}
