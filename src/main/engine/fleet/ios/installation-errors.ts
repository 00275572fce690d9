/**
 * installation_proxy's refusals in words. appium-ios-device reports the phone's answer as `Unexpected data: {json}`
 * (`{"Error":"UninstallProhibited","ErrorDescription":...}`), which means nothing to the person who pressed the button.
 */
export function installationProblem(error: Error, app: string): Error {
  const json = /^Unexpected data: (\{.*\})$/s.exec(error.message)?.[1];
  if (!json) return error;
  let answer: { Error?: unknown; ErrorDescription?: unknown };
  try {
    answer = JSON.parse(json) as typeof answer;
  } catch {
    return error;
  }
  const code = String(answer.Error ?? '');
  const detail = typeof answer.ErrorDescription === 'string' && answer.ErrorDescription ? answer.ErrorDescription.replace(/\.?$/, '.') : '';
  const sentence = {
    UninstallProhibited: `${app} is one of iOS's own apps: the iPhone does not let it be uninstalled.`,
    ApplicationVerificationFailed: `the iPhone refused the app's signature: it must be signed for this iPhone (its UDID in the provisioning profile). ${detail}`,
    PackageInspectionFailed: `the iPhone could not read the app package. ${detail}`,
    PackageExtractionFailed: `the iPhone could not unpack the app package. ${detail}`,
    DeviceOSVersionTooLow: `the app needs a newer iOS than this iPhone has. ${detail}`,
    IncorrectArchitecture: `the app is not built for this iPhone's processor. ${detail}`,
  }[code] ?? `the iPhone refused (${code || 'no reason given'}). ${detail}`;
  return new Error(sentence.trim(), { cause: error });
}
