/**
 * Protocol-faithful simulated iPhones for tests and demo mode: a usbmuxd on loopback TCP (what
 * USBMUXD_SOCKET_ADDRESS points libimobiledevice and appium-ios-device at) with phones that speak lockdownd,
 * installation_proxy, AFC, syslog_relay and WebDriverAgent through it.
 */
export { SimulatedUsbmuxd, type UsbmuxDevice } from './usbmuxd.js';
import { SimulatedIPhone } from './simulated-iphone.js';
import { RemoteServices } from './remote-services.js';

// Every phone made through this module serves RSD and its RemoteXPC services in its tunnel (see remoteServicesFor).
SimulatedIPhone.remoteServicesFor = (phone) => new RemoteServices(phone);

export { SimulatedIPhone, SYSLOG_SERVICE, type SimulatedIPhoneOptions } from './simulated-iphone.js';
export { CORE_DEVICE_PROXY_SERVICE, CoreDeviceTunnel } from './tunnel/core-device-proxy.js';
export { SETTINGS, SAFARI, NOTES, APP_STATE, type Springboard } from './springboard.js';
export { WDA_PORT, MJPEG_PORT, WDA_BUNDLE_ID } from './wda.js';
export { LOCKDOWN_PORT } from './lockdownd.js';
export { IMAGE_MOUNTER_SERVICE, PERSONALIZATION_IDENTIFIERS, type ImageMount } from './image-mounter.js';
export { DIAGNOSTICS_RELAY_SERVICE } from './diagnostics-relay.js';
export { inspectIpa } from './installation-proxy.js';
export { TestManager, HOUSE_ARREST_SERVICE, TESTMANAGERD_SECURE_SERVICE, INSTRUMENTS_SECURE_SERVICE } from './test-manager.js';
export { archive, unarchive, NSUUID, NSURL, NSError } from './nskeyed.js';
export { DtxReader, DtxConnection, encodeDtx, DTX_TYPE } from './dtx.js';
export { startCoreDevice } from './core-device.js';
