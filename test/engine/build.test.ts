import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'benchtop-build-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('npm run build builds the desktop bundles on a clone where Electron is not installed (only npm start installs it)', () => {
  // A clean clone: the sources and the installed dependencies, but no desktop/node_modules.
  for (const path of ['src', 'scripts', 'resources', 'package.json', 'package-lock.json', 'electron.vite.config.ts', 'vite.renderer.config.ts', 'tsconfig.json']) {
    cpSync(join(ROOT, path), join(dir, path), { recursive: true, preserveTimestamps: true });
  }
  mkdirSync(join(dir, 'desktop'));
  cpSync(join(ROOT, 'desktop/package.json'), join(dir, 'desktop/package.json'));
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  const build = spawnSync('npm', ['run', 'build'], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
  expect(build.status, build.stdout + build.stderr).toBe(0);
  for (const out of ['out/main/index.js', 'out/preload/index.cjs', 'out/renderer/index.html']) expect(existsSync(join(dir, out)), out).toBe(true);
}, 150_000);
