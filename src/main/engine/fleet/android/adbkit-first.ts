// adbkit turns on Bluebird's cancellation as it loads, which Bluebird refuses once one of its promises has settled.
// Unbundled, the packages that share node_modules/bluebird with it (the APK reader, appium-ios-device's
// @appium/support) import this before they load, so that adbkit's switch comes first whichever of them loads first.
import '@devicefarmer/adbkit';
