import { forbidden } from '../domain/errors.js';
import type { Stores } from '../store/index.js';
import { requireInteractive } from './auth.js';
import type { Caller } from './scope.js';

export const OWNER_SETTING = 'owner_user_id';

/** The lab owner: the first account, who administers the lab (settings, Mac hosts, the assistant's model). */
export class LabOwner {
  constructor(private readonly stores: Pick<Stores, 'settings'>) {}

  id(): string | undefined {
    return this.stores.settings.get(OWNER_SETTING);
  }

  record(userId: string): void {
    this.stores.settings.set(OWNER_SETTING, userId);
  }

  is(userId: string): boolean {
    return this.id() === userId;
  }

  /** Lab administration is for the lab owner, signed in interactively. */
  require(caller: Caller): void {
    requireInteractive(caller);
    if (!this.is(caller.user.id)) throw forbidden('not_lab_owner', 'Only the lab owner can change lab settings.');
  }
}
