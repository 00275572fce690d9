import type { SecretStore } from '../secrets.js';

/** A Mac host's (or a provider's) credentials: its own login, and the login of the VMs it runs when they are not Tart's default. */
export interface HostSecrets {
  privateKey?: string;
  passphrase?: string;
  password?: string;
  vmPrivateKey?: string;
  vmPassword?: string;
}

/**
 * The Mac hosts' credentials in the secret store, one entry per host. Both the host administration (which writes
 * them) and the instance manager (which logs in with them) get this, rather than one reaching into the other.
 */
export class HostSecretStore {
  /** `kind` keeps one kind of host's entries apart from another's: Mac hosts, providers. */
  constructor(
    private readonly secrets: SecretStore,
    private readonly kind = 'mac-host',
  ) {}

  async read(hostId: string): Promise<HostSecrets> {
    const raw = await this.secrets.get(this.keyOf(hostId));
    return raw ? (JSON.parse(raw) as HostSecrets) : {};
  }

  write(hostId: string, secrets: HostSecrets): Promise<void> {
    return this.secrets.set(this.keyOf(hostId), JSON.stringify(secrets));
  }

  remove(hostId: string): Promise<void> {
    return this.secrets.delete(this.keyOf(hostId));
  }

  private keyOf(hostId: string): string {
    return `${this.kind}:${hostId}`;
  }
}
