import { describe, expect, it } from 'vitest';
import { installationProblem } from './installation-errors.js';

describe('installation_proxy refusals in words', () => {
  it('says what UninstallProhibited and a signature refusal mean, and never shows the phone\'s raw answer', () => {
    const raw = (answer: object) => new Error(`Unexpected data: ${JSON.stringify(answer)}`);
    expect(installationProblem(raw({ Error: 'UninstallProhibited', ErrorDescription: 'com.apple.mobilesafari is a system app.', Status: 'Failed' }), 'com.apple.mobilesafari').message)
      .toBe('com.apple.mobilesafari is one of iOS\'s own apps: the iPhone does not let it be uninstalled.');
    const signature = installationProblem(raw({ Error: 'ApplicationVerificationFailed', ErrorDescription: 'Failed to verify code signature' }), 'the app').message;
    expect(signature).toBe('the iPhone refused the app\'s signature: it must be signed for this iPhone (its UDID in the provisioning profile). Failed to verify code signature.');
    expect(installationProblem(raw({ Error: 'SomethingNew' }), 'the app').message).toBe('the iPhone refused (SomethingNew).');
    const other = new Error('the usbmuxd connection closed');
    expect(installationProblem(other, 'the app')).toBe(other);
  });
});
