import { useState } from 'react';
import type { WebDriverRun } from '../../shared/api/webdriver.js';
import { api } from '../app-context.js';
import { linkTo } from '../router.js';
import { fmtTime, fmtTimeOfDay, useAction } from '../ui.js';
import { CommandWords } from './webdriver-result.js';

/** How often a session's page asks for its WebDriver runs' new commands: often enough to read as a stream. */
export const WEBDRIVER_POLL_MS = 1000;

/** A command as the table says it: its words (script name, locator, the session's end) or its route. */
const what = (c: WebDriverRun['commands'][number]) => (c.path === '' && c.label ? c.label : `${c.method} ${c.path || '/'}${c.label ? ` (${c.label})` : ''}`);

/**
 * A WebDriver run on a phone of the session, beside the phone's live screen: who drives it, its commands as they come
 * (newest on top), and the deliberate step that takes the phone over, which ends the run as interrupted.
 */
export function WebDriverRunPanel({ sessionId, run, onTakenOver }: { sessionId: string; run: WebDriverRun; onTakenOver(): void }) {
  const [confirming, setConfirming] = useState(false);
  const takeOver = useAction();
  const latest = [...run.commands].reverse();
  return (
    <section className="webdriver-run" aria-label={`WebDriver run on ${run.deviceName}`}>
      <h3>
        WebDriver run <span className="muted">· {run.createdBy} · since {fmtTime(run.startedAt)} · {run.commands.length} commands</span>
      </h3>
      <p className="muted">
        Watch-only while the run drives {run.deviceName}: its controls are off for everyone. Its{' '}
        <a href={`/test-results/${run.testResultId}`} onClick={linkTo(`/test-results/${run.testResultId}`)}>test result</a> keeps the commands, logs and video.
      </p>
      <div className="button-row" role="group" aria-label="Take over">
        {!confirming ? (
          <button type="button" className="danger" onClick={() => setConfirming(true)}>Take over {run.deviceName}…</button>
        ) : (
          <>
            <span>End the run as interrupted and drive {run.deviceName} yourself?</span>
            <button type="button" className="danger" disabled={takeOver.pending} onClick={() => void takeOver.run(() => api.takeOverWebDriverRun(sessionId, run.id)).then(() => onTakenOver())}>
              Take over now
            </button>
            <button type="button" onClick={() => { setConfirming(false); takeOver.setError(undefined); }}>Cancel</button>
          </>
        )}
        {takeOver.error && <span role="alert" className="error inline">{takeOver.error}</span>}
      </div>
      <div className="webdriver-commands" role="log" aria-live="polite" aria-label={`Commands on ${run.deviceName}`} tabIndex={0}>
        <table>
          <thead>
            <tr><th scope="col">Time</th><th scope="col">Command</th><th scope="col">Status</th><th scope="col">Took</th></tr>
          </thead>
          <tbody>
            {latest.map((c, i) => (
              <tr key={`${c.at}-${i}`} className={c.status >= 400 ? 'failed' : undefined}>
                <td><time dateTime={c.at}>{fmtTimeOfDay(c.at)}</time></td>
                <td><CommandWords what={what(c)} />{c.error ? <span className="webdriver-command-error">{c.error}</span> : null}</td>
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
