/**
 * A protocol-faithful simulated Android phone for tests and demo mode. It imports only node built-ins and pngjs,
 * so the product can load it as well as the test suite.
 */
export { SimulatedPhone, DEVICE_FEATURES, type SimulatedPhoneOptions, type PhoneState } from './simulated-phone.js';
export { connectToAdb, disconnectFromAdb, findAdb, runAdb, startAdbServer, type AdbResult, type AdbRunOptions, type AdbServer } from './adb-cli.js';
export { buildApk, readApkInfo, type ApkInfo, type ApkSpec } from './apk.js';
