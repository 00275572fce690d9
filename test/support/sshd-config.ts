import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What a test's own sshd needs in `dir`: a host key, a login key (`id`, authorized), and an sshd_config that listens on
 * `listen` only, lets in that key alone and forwards what the lab forwards. `extra` lines go at the end.
 */
/** A new ed25519 key pair at `file` and `file`.pub, with no passphrase. */
export const keygen = (file: string) => execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'benchtop-test', '-f', file]);

export function prepareSshd(dir: string, listen: string, extra: string[] = []): void {
  keygen(join(dir, 'host_key'));
  keygen(join(dir, 'id'));
  writeFileSync(join(dir, 'authorized_keys'), readFileSync(join(dir, 'id.pub')));
  writeFileSync(
    join(dir, 'sshd_config'),
    [
      `ListenAddress ${listen}`,
      `HostKey ${join(dir, 'host_key')}`,
      `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
      // The files live under /tmp, which is world-writable.
      'StrictModes no',
      'UsePAM no',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PermitRootLogin prohibit-password',
      'AllowTcpForwarding yes',
      'AllowStreamLocalForwarding yes',
      'PrintMotd no',
      'PrintLastLog no',
      `PidFile ${join(dir, 'sshd.pid')}`,
      ...extra,
      '',
    ].join('\n'),
  );
  // sshd refuses to start as root without its privilege separation directory, which apt does not create.
  try {
    mkdirSync('/run/sshd', { recursive: true });
  } catch {
    /* not root: sshd does not need it then */
  }
}
