import type { ServiceSession, StreamIo } from '../../protocols/adb/transport.js';
import type { Shell, Sink } from './shell.js';

const INTERRUPT = '\x03';

/**
 * `adb shell` with no command: mksh behind a PTY. The terminal's line discipline echoes and uses CRLF; a command line
 * runs in the foreground while input keeps arriving, so that Ctrl+C (the PTY's SIGINT) interrupts it and the prompt
 * comes back. What is typed meanwhile waits for the next prompt. Tab completes a command or path name. `env` holds
 * what the client asked for in the service's arguments (TERM).
 */
export function ptyShell(io: StreamIo, shell: Shell, deviceName: string, env: Record<string, string> = {}): ServiceSession {
  const session = shell.session();
  // What adbd puts in the shell's environment from the client's request (TERM=xterm-256color): `clear` and editors read it.
  for (const [name, value] of Object.entries(env)) session.vars.set(name, value);
  const prompt = () => `${deviceName}:${session.cwd} $ `;
  const tty: Sink = { write: (data) => io.write(Buffer.from(data.toString().replace(/\r?\n/g, '\r\n'))) };
  let line = '';
  let foreground: AbortController | undefined;
  let typeAhead = '';

  const runForeground = (command: string) => {
    const interrupt = new AbortController();
    foreground = interrupt;
    void (async () => {
      await shell.run(command, { stdout: tty, signal: AbortSignal.any([io.signal, interrupt.signal]), session });
      foreground = undefined;
      if (io.signal.aborted) return;
      await io.write(prompt());
      const pending = typeAhead;
      typeAhead = '';
      await input(pending);
    })();
  };

  const complete = async () => {
    const word = /\S*$/.exec(line)![0];
    const candidates = shell.completions(word, session, line.trimStart() === word);
    if (candidates.length === 0) return io.write('\x07');
    let common = candidates[0]!;
    for (const c of candidates) while (!c.startsWith(common)) common = common.slice(0, -1);
    if (candidates.length === 1 && !common.endsWith('/')) common += ' ';
    if (common.length > word.length) {
      const added = common.slice(word.length);
      line += added;
      return io.write(added);
    }
    await io.write(`\r\n${candidates.join('  ')}\r\n${prompt()}${line}`);
  };

  const input = async (text: string): Promise<void> => {
    for (const ch of text) {
      if (foreground) {
        // SIGINT flushes the terminal's input queue, as a PTY's line discipline does.
        if (ch === INTERRUPT) {
          typeAhead = '';
          await io.write('^C\r\n');
          foreground.abort();
        } else typeAhead += ch;
        continue;
      }
      if (ch === '\r' || ch === '\n') {
        await io.write('\r\n');
        const command = line;
        line = '';
        if (command.trim() === 'exit') return io.end();
        if (command.trim() === '') {
          await io.write(prompt());
          continue;
        }
        runForeground(command);
      } else if (ch === '\x7f' || ch === '\b') {
        if (line) await io.write('\b \b');
        line = [...line].slice(0, -1).join('');
      } else if (ch === INTERRUPT) {
        line = '';
        await io.write(`^C\r\n${prompt()}`);
      } else if (ch === '\x04') {
        if (line === '') return io.end();
      } else if (ch === '\t') {
        await complete();
      } else {
        line += ch;
        await io.write(ch);
      }
    }
  };

  void io.write(prompt());
  return {
    onData: (data) => input(data.toString('utf8')),
    onClose: () => foreground?.abort(),
  };
}
