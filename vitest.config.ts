import { defineConfig } from 'vitest/config';
import SlowFirstSequencer from './test/support/slow-first-sequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each API test file boots its own engine on an ephemeral port with its own SQLite file.
    pool: 'forks',
    // Passwords hashed at a lower scrypt cost: thousands of sign-ups and logins at the real cost were minutes of CPU.
    // Honoured only under NODE_ENV=test (src/main/engine/services/credentials.ts); a test of the cost itself unsets it.
    env: { BENCHTOP_TEST_SCRYPT_N: '1024' },
    // A worker keeps the modules it has loaded from one file to the next (each file still starts its own engine, peers
    // and temp dirs): re-importing the engine, Appium's client and the simulators for every file was a fifth of the run.
    isolate: false,
    // Most of a test file's time is spent waiting on its peers (an adb server, sshd, Chromium, a simulated phone), not
    // on the CPU: vitest's default of one worker per core but one would leave a 2-core machine idle most of the run.
    maxWorkers: Number(process.env.BENCHTOP_TEST_WORKERS) || 3,
    // The default reporter, then the ten slowest files, so that a file that grew slow is seen the day it grows.
    reporters: ['default', './test/support/slowest-files-reporter.ts'],
    // The slowest files first, so that none of them starts last (test/support/slow-first-sequencer.ts).
    sequence: { sequencer: SlowFirstSequencer },
    // The end-to-end tests serve the built renderer: built once per run, and only when a source changed. The network
    // hub that namespaces plug into is made before any file starts (test/support/netns.ts says why).
    globalSetup: ['test/e2e/support/global-setup.ts', 'test/support/network-hub.ts'],
    // BENCHTOP_TEST_CPU_LOG=<file>: each file's CPU, to find what the suite's time goes on (a no-op otherwise).
    setupFiles: ['test/support/cpu-per-file.ts'],
  },
});
