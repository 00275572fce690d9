/**
 * What a real phone costs, where a simulated one is far faster: benchmarks print their figure on the simulated phone
 * and, beside it, what the same overhead comes to with a real phone's published cost under both sides.
 */

/** Published: "Android screenshots can take an average of 0.3 to 0.5 seconds" with adb exec-out screencap. */
export const REAL_SCREENCAP_MS = 300;
export const REAL_SCREENCAP_SOURCE = 'the 0.3-0.5 s Appium Pro measured (edition 83, appiumpro.com/editions/83)';

/**
 * Published: "on my Galaxy Note 4, adb input tap takes 1160 ms" (and 860 ms with sendevent). `input tap` starts a
 * Java process on the phone for every tap, which the engine's taps go through (fleet/android/driver.ts); the simulated
 * phone answers it in about a millisecond.
 */
export const REAL_INPUT_TAP_MS = 1160;
export const REAL_INPUT_TAP_SOURCE = "a Galaxy Note 4's adb input tap (habr.com/ru/post/712374, 2023); a newer phone is faster, but still starts a Java process per tap";
