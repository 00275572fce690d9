// `npm test`: the typecheck, the lint and the tests, run side by side. The typecheck and the lint each take one core
// for about a minute; the tests spend most of their time waiting on their peers (an adb server, sshd, Chromium, a
// simulated phone), so run one after the other the checks were a minute of the budget with the tests' cores idle.
// The tests print as they go; each check's output is printed whole when it ends. Arguments go to vitest
// (`npm test -- test/fleet` runs those files, after the same checks).
import { spawn } from 'node:child_process';

const checks = [
  ['typecheck', 'npm', ['run', '--silent', 'typecheck']],
  ['lint', 'npm', ['run', '--silent', 'lint']],
];

const run = (name, command, args, stdio) => new Promise((resolve) => {
  const started = Date.now();
  const child = spawn(command, args, { stdio });
  let output = '';
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => (output += chunk));
  child.on('error', (error) => resolve({ name, code: 1, output: `${output}${error.message}\n`, seconds: 0 }));
  child.on('close', (code) => resolve({ name, code: code ?? 1, output, seconds: (Date.now() - started) / 1000 }));
});

const tests = run('vitest', 'npx', ['vitest', 'run', ...process.argv.slice(2)], 'inherit');
const results = await Promise.all(checks.map(async ([name, command, args]) => {
  const result = await run(name, command, args, ['ignore', 'pipe', 'pipe']);
  process.stdout.write(`\n> npm run ${name}: ${result.code === 0 ? 'passed' : `failed (exit ${result.code})`} in ${result.seconds.toFixed(0)} s\n${result.output}`);
  return result;
}));
results.push(await tests);
for (const { name, code, seconds } of results) console.log(`${name}: ${code === 0 ? 'passed' : `FAILED (exit ${code})`} in ${seconds.toFixed(0)} s`);
process.exit(results.some((r) => r.code !== 0) ? 1 : 0);
