import { api } from '../app-context.js';
import { Status, useLoad } from '../ui.js';

/** The providers' health on the fleet screen, for everyone: a phone that went offline may be a whole box that did. */
export function ProviderHealth() {
  const providers = useLoad(() => api.fleetProviders(), [], 5000);
  const list = providers.data?.data ?? [];
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
