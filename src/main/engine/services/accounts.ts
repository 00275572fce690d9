import { randomUUID } from 'node:crypto';
import { conflict, forbidden, unauthorized } from '../domain/errors.js';
import { PERSONAL } from '../domain/organization-names.js';
import type { UserRow } from '../store/users.js';
import { generatePassword, hashPassword, verifyPassword } from './credentials.js';
import type { EngineContext } from './context.js';
import { OWNER_SETTING, isSignupOpen, labOwnerId } from './lab.js';

/** Creates an account with its Personal organization, where it is admin. */
export async function signup(
  ctx: EngineContext,
  input: { email: string; password: string; name?: string },
  options: { asOwner?: boolean } = {},
): Promise<UserRow> {
  if (!options.asOwner && !isSignupOpen(ctx)) {
    throw forbidden('signup_closed', 'Sign-up is closed on this lab. Ask the lab owner for an invitation.');
  }
  const email = input.email.trim();
  const passwordHash = await hashPassword(input.password);
  const now = ctx.now();
  const user: UserRow = { id: randomUUID(), email, name: input.name?.trim() || email.split('@')[0]!, passwordHash, createdAt: now };
  const { users, organizations } = ctx.stores;
  ctx.stores.db.transaction(() => {
    if (users.getByEmail(email)) throw conflict('email_taken', 'An account with that email already exists.');
    users.insert(user);
    const orgId = randomUUID();
    organizations.insert({ id: orgId, name: PERSONAL, personalOf: user.id, plan: 'hobby', cancelAtPeriodEnd: false, createdAt: now });
    organizations.addMember(orgId, user.id, 'admin', now);
  }).immediate();
  return user;
}

export async function login(ctx: EngineContext, email: string, password: string): Promise<UserRow> {
  const user = ctx.stores.users.getByEmail(email.trim());
  // Hash even for an unknown email, so that response time does not reveal which emails have accounts.
  dummyHash ??= hashPassword(generatePassword());
  const ok = await verifyPassword(password, user?.passwordHash ?? (await dummyHash));
  if (!user || !ok) throw unauthorized('Wrong email or password.');
  return user;
}
let dummyHash: Promise<string> | undefined;

/**
 * Deletes the account and its Personal organization (with its sessions and keys). Refused while the caller
 * belongs to another organization, for the lab owner, and while a device or an instance is still active in Personal.
 */
export function deleteAccount(ctx: EngineContext, user: UserRow): void {
  const { organizations, devices, instances, users } = ctx.stores;
  if (user.id === labOwnerId(ctx)) {
    throw conflict('lab_owner', 'The lab owner account cannot be deleted.');
  }
  if (organizations.nonPersonalCount(user.id) > 0) {
    throw conflict('member_of_other_organizations', 'Leave or delete your other organizations before deleting your account.');
  }
  const personal = organizations.personalOf(user.id);
  if (personal && devices.activeCount(personal.id) > 0) {
    throw conflict('device_allocated', 'Release the devices still allocated in your Personal organization first.');
  }
  if (personal && instances.activeCount(personal.id) > 0) {
    throw conflict('instance_allocated', 'Release the instances still active in your Personal organization first.');
  }
  // personal_of and every other reference cascade from the user row.
  users.remove(user.id);
}

/**
 * On the first start with an empty data dir, creates the lab owner's account and Personal organization.
 * Returns the generated password when none was configured, so that the caller can show it once.
 */
export async function ensureLabOwner(ctx: EngineContext): Promise<{ created: boolean; email: string; generatedPassword?: string }> {
  const { users, settings } = ctx.stores;
  const existing = labOwnerId(ctx);
  if (existing) return { created: false, email: users.get(existing)?.email ?? ctx.config.ownerEmail };
  // A crash between creating the owner and recording it leaves the owner as the first account: adopt it.
  const first = users.first();
  if (first) {
    settings.set(OWNER_SETTING, first.id);
    return { created: false, email: first.email };
  }
  const generatedPassword = ctx.config.ownerPassword ? undefined : generatePassword();
  const password = ctx.config.ownerPassword ?? generatedPassword!;
  const owner = await signup(ctx, { email: ctx.config.ownerEmail, password, name: 'Lab owner' }, { asOwner: true });
  settings.set(OWNER_SETTING, owner.id);
  return { created: true, email: owner.email, generatedPassword };
}
