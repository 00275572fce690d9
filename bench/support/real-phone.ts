/**
 * What a real phone costs, where a simulated one is far faster: benchmarks print their figure on the simulated phone
 * and, beside it, what the same overhead comes to with a real phone's published cost under both sides.
 */

/** Published: "Android screenshots can take an average of 0.3 to 0.5 seconds" with adb exec-out screencap. */
export const REAL_SCREENCAP_MS = 300;
export const REAL_SCREENCAP_SOURCE = 'the 0.3-0.5 s Appium Pro measured (edition 83, appiumpro.com/editions/83)';
