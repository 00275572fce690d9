/** What the Files screen and the phone page say about app files: sentences, not the API's codes. */

/** Only an Android or iOS app can be stored and installed; the page refuses anything else before uploading it. */
export const APP_EXTENSIONS = ['.apk', '.ipa'] as const;
export const isAppFile = (name: string) => APP_EXTENSIONS.some((ext) => name.toLowerCase().endsWith(ext));

export const notAnAppMessage = (name: string) =>
  `${name} is not an app: choose an Android .apk or an iOS .ipa file.`;

/**
 * A stored file's failureReason ("code: detail") as a sentence. The detail of an unreadable archive ("End of central
 * directory record signature not found") means nothing to a person, so a known code gets its own words.
 */
export function fileFailureSentence(reason: string | undefined | null): string {
  if (!reason) return 'The file could not be processed.';
  const [code, ...rest] = reason.split(':');
  const detail = rest.join(':').trim();
  switch (code?.trim()) {
    case 'not_an_app':
      return 'This file is not an app Benchtop can install: it is neither an Android .apk nor an iOS .ipa, or it is damaged.';
    case 'size_mismatch':
      return 'The upload was cut short: the bytes that arrived are not the size of the file. Try again.';
    case 'sha256_mismatch':
      return 'The file changed or was damaged on the way: its checksum does not match. Try again.';
    default: {
      const text = detail || reason;
      const sentence = text.charAt(0).toUpperCase() + text.slice(1);
      return /[.!?]$/.test(sentence) ? sentence : `${sentence}.`;
    }
  }
}
