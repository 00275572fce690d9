import { EventEmitter } from 'node:events';
import type { EngineConfig } from '../config.js';
import { AndroidFleet } from './android/android-fleet.js';
import type { Phone, PhoneDriver, PhoneSource } from './types.js';

export interface Fleet extends PhoneSource {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Moves the Android fleet to another adb server; absent when the Android fleet is off. */
  retarget?(address: { host: string; port: number }): Promise<void>;
}

/** A fleet with no phones, for an engine whose Android fleet is switched off (BENCHTOP_ADB=off). */
class EmptyFleet extends EventEmitter implements Fleet {
  async start() {}
  async stop() {}
  list(): Phone[] {
    return [];
  }
  get(): Phone | undefined {
    return undefined;
  }
  driver(serial: string): PhoneDriver {
    throw new Error(`No phone ${serial}: the Android fleet is off.`);
  }
}

export function createFleet(config: EngineConfig, log: (message: string) => void): Fleet {
  return config.adb ? new AndroidFleet(config.adb, log) : new EmptyFleet();
}
