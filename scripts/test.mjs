// npm test: the test suite, with the typecheck and the lint beside it. On two cores the suite keeps the machine about
// 94 % busy, and the two checks (a minute of one core each) run at the lowest priority, so they take the CPU the
// suite leaves idle while its tests wait on their peers, instead of a minute of their own before the suite starts.
// The suite's output streams as it runs; each check's is printed whole at the end. Any failure fails npm test.
import { spawn } from 'node:child_process';
import { constants, setPriority } from 'node:os';
import { fileURLToPath } from 'node:url';

const VITEST = fileURLToPath(new URL('../node_modules/vitest/vitest.mjs', import.meta.url));

const checks = [
  ['typecheck', 'npm', ['run', '--silent', 'typecheck']],
  ['lint', 'npm', ['run', '--silent', 'lint']],
];

function run(command, args, { buffered, lowPriority }) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(command, args, { stdio: buffered ? ['ignore', 'pipe', 'pipe'] : 'inherit' });
    let output = '';
    if (buffered) {
      child.stdout.on('data', (chunk) => (output += chunk));
      child.stderr.on('data', (chunk) => (output += chunk));
    }
    // npm and the node under it inherit the priority, set before either has done any work.
    if (lowPriority && child.pid !== undefined) {
      try {
        setPriority(child.pid, constants.priority.PRIORITY_LOW);
      } catch {
        // Not permitted here: the check runs at the suite's priority, which is only slower.
      }
    }
    child.on('error', (error) => resolve({ code: 1, output: `${output}${error.message}\n`, seconds: 0 }));
    child.on('close', (code) => resolve({ code: code ?? 1, output, seconds: (Date.now() - started) / 1000 }));
  });
}

const checked = checks.map(([name, command, args]) => run(command, args, { buffered: true, lowPriority: true }).then((r) => ({ name, ...r })));
const suite = await run(process.execPath, [VITEST, 'run', ...process.argv.slice(2)], { buffered: false, lowPriority: false });
const results = await Promise.all(checked);
for (const { name, code, output, seconds } of results) {
  process.stdout.write(`\n> npm run ${name}: ${code === 0 ? 'passed' : `failed (exit ${code})`} in ${seconds.toFixed(0)} s (beside the suite)\n${output}`);
}
process.exit(suite.code !== 0 || results.some((r) => r.code !== 0) ? 1 : 0);
