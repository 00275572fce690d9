import type { WebDriverRun } from '../../shared/api/webdriver.js';
import { api } from '../app-context.js';
import { linkTo } from '../router.js';
import { fmtTime, useLoad } from '../ui.js';

/** How often a session's page asks for its WebDriver runs' new commands: often enough to read as a stream. */
const POLL_MS = 1000;

function RunCommands({ run }: { run: WebDriverRun }) {
  const latest = [...run.commands].reverse();
  return (
    <section className="webdriver-run" aria-label={`WebDriver run on ${run.deviceName}`}>
      <h3>
        WebDriver run on {run.deviceName} <span className="muted">· {run.createdBy} · since {fmtTime(run.startedAt)} · {run.commands.length} commands</span>
      </h3>
      <p className="muted">
        Driven through the lab&apos;s <code>/wd/hub</code>; it ends when its client deletes the session, after {run.newCommandTimeoutSeconds} s without a
        command, or when the phone is released. Its <a href={`/test-results/${run.testResultId}`} onClick={linkTo(`/test-results/${run.testResultId}`)}>test result</a> keeps the commands, logs and video.
      </p>
      <div className="webdriver-commands" role="log" aria-live="polite" aria-label={`Commands on ${run.deviceName}`} tabIndex={0}>
        <table>
          <thead>
            <tr><th scope="col">Time</th><th scope="col">Command</th><th scope="col">Status</th><th scope="col">Took</th></tr>
          </thead>
          <tbody>
            {latest.map((c, i) => (
              <tr key={`${c.at}-${i}`} className={c.status >= 400 ? 'failed' : undefined}>
                <td>{fmtTime(c.at)}</td>
                <td><code>{c.method} {c.path || '/'}</code>{c.error ? <span className="error"> {c.error}</span> : null}</td>
                <td>{c.status}</td>
                <td>{Math.round(c.ms)} ms</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

/** The WebDriver sessions running on this session's phones, each with its commands as they come. */
export function WebDriverRuns({ sessionId }: { sessionId: string }) {
  const runs = useLoad(() => api.webDriverRuns(sessionId), [sessionId], POLL_MS);
  if (!runs.data || runs.data.data.length === 0) return null;
  return (
    <>
      {runs.data.data.map((run) => (
        <RunCommands key={run.id} run={run} />
      ))}
    </>
  );
}
