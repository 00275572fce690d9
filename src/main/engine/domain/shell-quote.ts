/** Single-quotes one argument for a POSIX shell: the phone's /system/bin/sh, or a Mac's over SSH. */
export const shellQuote = (value: string) => `'${value.replace(/'/g, `'\\''`)}'`;
