import { useFleet } from '../app-context.js';
import { Status } from '../ui.js';

/**
 * The providers' health on the fleet screen, for everyone: a phone that went offline may be a whole box that did.
 * From the fleet's own poll (fleet-store.ts), so that the screen's first drawing has it with the phones.
 */
export function ProviderHealth() {
  const list = useFleet((s) => s.providers);
  if (list.length === 0) return null;
  return (
    <>
      <h2>Providers</h2>
      <div className="table-wrap">
        <table className="table" aria-label="Providers">
          <thead><tr><th>Name</th><th>Health</th><th>Phones</th></tr></thead>
          <tbody>
            {list.map((p) => (
              <tr key={p.name}>
                <td>{p.name}{p.paused && <span className="muted"> (paused)</span>}</td>
                <td><Status value={p.health} />{p.healthMessage && <span className="muted"> {p.healthMessage}</span>}</td>
                <td>{p.phones}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
