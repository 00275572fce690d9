import { randomUUID } from 'node:crypto';
import type { EngineConfig } from '../config.js';
import { conflict, forbidden, unauthorized } from '../domain/errors.js';
import { PERSONAL } from '../domain/organization-names.js';
import type { Stores } from '../store/index.js';
import type { UserRow } from '../store/users.js';
import { generatePassword, hashPassword, verifyPassword } from './credentials.js';
import type { Invitations } from './invitations.js';
import type { LabOwner } from './lab-owner.js';
import type { LabSettingsService } from './lab-settings.js';
import type { Clock } from './scope.js';

/** A hash to check a login for an unknown email against, made once. */
let dummyHash: Promise<string> | undefined;

/** Accounts: sign-up, login, deletion, and the lab owner's account on the first start. */
export class Accounts {
  constructor(
    private readonly stores: Pick<Stores, 'db' | 'users' | 'organizations' | 'devices' | 'instances'>,
    private readonly labOwner: LabOwner,
    private readonly labSettings: Pick<LabSettingsService, 'isSignupOpen'>,
    private readonly invitations: Pick<Invitations, 'forSignup' | 'admitNewAccount'>,
    private readonly config: Pick<EngineConfig, 'ownerEmail' | 'ownerPassword'>,
    private readonly now: Clock,
  ) {}

  /**
   * Creates an account with its Personal organization, where it is admin. With an invitation's secret (for its
   * email alone, even while sign-up is closed) the account also joins the inviting organization at once.
   */
  async signup(
    input: { email: string; password: string; name?: string; invitation?: string },
    options: { asOwner?: boolean } = {},
  ): Promise<UserRow> {
    // Checked before the password hash, so that a wrong link is told at once; checked again in the transaction.
    if (input.invitation !== undefined) this.invitations.forSignup(input.invitation, input.email);
    else if (!options.asOwner && !this.labSettings.isSignupOpen()) {
      throw forbidden('signup_closed', 'Sign-up is closed on this lab. Ask the lab owner for an invitation.');
    }
    const email = input.email.trim();
    const passwordHash = await hashPassword(input.password);
    const now = this.now();
    const user: UserRow = { id: randomUUID(), email, name: input.name?.trim() || email.split('@')[0]!, passwordHash, createdAt: now };
    const { users, organizations } = this.stores;
    this.stores.db.transaction(() => {
      if (users.getByEmail(email)) throw conflict('email_taken', 'An account with that email already exists.');
      users.insert(user);
      const orgId = randomUUID();
      organizations.insert({ id: orgId, name: PERSONAL, personalOf: user.id, plan: 'hobby', cancelAtPeriodEnd: false, createdAt: now });
      organizations.addMember(orgId, user.id, 'admin', now);
      if (input.invitation !== undefined) this.invitations.admitNewAccount(input.invitation, user);
    }).immediate();
    return user;
  }

  async login(email: string, password: string): Promise<UserRow> {
    const user = this.stores.users.getByEmail(email.trim());
    // Hash even for an unknown email, so that response time does not reveal which emails have accounts.
    dummyHash ??= hashPassword(generatePassword());
    const ok = await verifyPassword(password, user?.passwordHash ?? (await dummyHash));
    if (!user || !ok) throw unauthorized('Wrong email or password.');
    return user;
  }

  /**
   * Deletes the account and its Personal organization (with its sessions and keys). Refused while the caller
   * belongs to another organization, for the lab owner, and while a device or an instance is still active in Personal.
   */
  deleteAccount(user: UserRow): void {
    const { organizations, devices, instances, users } = this.stores;
    if (this.labOwner.is(user.id)) {
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
  async ensureLabOwner(): Promise<{ created: boolean; email: string; generatedPassword?: string }> {
    const { users } = this.stores;
    const existing = this.labOwner.id();
    if (existing) return { created: false, email: users.get(existing)?.email ?? this.config.ownerEmail };
    // A crash between creating the owner and recording it leaves the owner as the first account: adopt it.
    const first = users.first();
    if (first) {
      this.labOwner.record(first.id);
      return { created: false, email: first.email };
    }
    const generatedPassword = this.config.ownerPassword ? undefined : generatePassword();
    const password = this.config.ownerPassword ?? generatedPassword!;
    const owner = await this.signup({ email: this.config.ownerEmail, password, name: 'Lab owner' }, { asOwner: true });
    this.labOwner.record(owner.id);
    return { created: true, email: owner.email, generatedPassword };
  }
}
