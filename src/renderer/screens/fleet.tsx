import { useEffect } from 'react';
import { fleetStore, useFleet } from '../app-context.js';
import { linkTo } from '../router.js';
import { Empty, ErrorBanner, Page, Spinner, Status } from '../ui.js';

export const FLEET_POLL_MS = 2000;

function Battery({ level }: { level: number | null }) {
  if (level === null) return <span className="muted">—</span>;
  return (
    <span className="battery" aria-label={`Battery ${level}%`}>
      <span className="battery-bar"><span style={{ width: `${level}%` }} className={level < 20 ? 'low' : ''} /></span>
      {level}%
    </span>
  );
}

/** Every phone and Mac host of the lab, polled: who holds what shows only for the current organization. */
export function FleetScreen() {
  const { devices, hosts, changes, loaded, error } = useFleet((s) => s);
  useEffect(() => fleetStore.getState().poll(FLEET_POLL_MS), []);

  // Unplugged phones stay listed (so that one which went missing can be seen), but only attached ones are the fleet.
  const attached = devices.filter((d) => d.state !== 'gone').length;
  const free = devices.filter((d) => d.state === 'device' && !d.held).length;
  const freeSlots = hosts.reduce((n, h) => n + h.freeSlots, 0);

  return (
    <Page title="Fleet" actions={<span className="muted" aria-live="polite">{loaded ? `${free} of ${attached} phones free · ${freeSlots} Mac slots free` : ''}</span>}>
      <ErrorBanner error={error} />
      {!loaded && <Spinner label="Loading the fleet" />}
      {changes.length > 0 && (
        <ul className="changes" aria-label="Recent plug and unplug events">
          {changes.slice(0, 5).map((c) => (
            <li key={`${c.serial}-${c.at}`} className={c.change}>
              {c.name || 'A phone'} ({c.serial}) {c.change} at {new Date(c.at).toLocaleTimeString()}
            </li>
          ))}
        </ul>
      )}
      <h2>Phones</h2>
      {loaded && devices.length === 0 ? <Empty>No phones. Plug one in over USB with USB debugging on, or run <code>npm run demo</code>.</Empty> : (
        <table className="table" aria-label="Phones">
          <thead>
            <tr><th>Name</th><th>Platform</th><th>Version</th><th>Serial</th><th>State</th><th>Battery</th><th>Holder</th></tr>
          </thead>
          <tbody>
            {devices.map((d) => (
              <tr key={d.serial} data-serial={d.serial}>
                <td>{d.name}</td>
                <td>{d.platform}</td>
                <td>{d.osVersion}</td>
                <td><code>{d.serial}</code></td>
                <td><Status value={d.state === 'device' ? (d.held ? 'in_use' : 'free') : d.state} /></td>
                <td><Battery level={d.battery} /></td>
                <td>
                  {d.heldBy ? (
                    <a href={`/sessions/${d.heldBy.sessionId}`} onClick={linkTo(`/sessions/${d.heldBy.sessionId}`)}>your session {d.heldBy.sessionId.slice(0, 8)}</a>
                  ) : d.held ? <span className="muted">another organization</span> : <span className="muted">free</span>}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h2>Mac hosts</h2>
      {loaded && hosts.length === 0 ? <Empty>No Mac hosts. The lab owner adds them in Settings.</Empty> : (
        <table className="table" aria-label="Mac hosts">
          <thead>
            <tr><th>Name</th><th>Mode</th><th>Image</th><th>Machine</th><th>Health</th><th>Free slots</th><th>Your instances</th></tr>
          </thead>
          <tbody>
            {hosts.map((h) => (
              <tr key={h.id}>
                <td>{h.name}</td>
                <td>{h.mode}</td>
                <td><code>{h.image}</code></td>
                <td>{h.machine.arch}, {h.machine.cpuCores} cores, {Math.round(h.machine.memoryMb / 1024)} GB</td>
                <td><Status value={h.health} />{h.healthMessage && <span className="muted"> {h.healthMessage}</span>}</td>
                <td>{h.freeSlots} / {h.maxInstances}</td>
                <td>
                  {h.instances.length === 0 ? <span className="muted">none</span> : h.instances.map((i) => (
                    <a key={i.instanceId} href={`/sessions/${i.sessionId}`} onClick={linkTo(`/sessions/${i.sessionId}`)}>{i.instanceId.slice(0, 8)} </a>
                  ))}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Page>
  );
}
