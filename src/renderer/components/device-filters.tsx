import type { Static } from 'typebox';
import type { DeviceFilter } from '../../shared/api/devices.js';
import { FILTER_OPERATORS } from '../../shared/device-filters.js';

export type Filter = Static<typeof DeviceFilter>;

const OPERATOR_LABELS: Record<string, string> = {
  EQUALS: 'is',
  STARTS_WITH: 'starts with',
  CONTAINS: 'contains',
  GREATER_THAN: '>',
  GREATER_THAN_OR_EQUALS: '≥',
  LESS_THAN: '<',
  LESS_THAN_OR_EQUALS: '≤',
};

/** A filter builder: platform is always first (the API requires it); name and version rows come and go. */
export function DeviceFilters({ filters, onChange }: { filters: Filter[]; onChange(filters: Filter[]): void }) {
  const update = (i: number, patch: Partial<Filter>) => {
    const next = filters.map((f, j) => (j === i ? { ...f, ...patch } : f));
    const changed = next[i]!;
    if (patch.attribute && !FILTER_OPERATORS[changed.attribute]!.includes(changed.operator)) changed.operator = FILTER_OPERATORS[changed.attribute]![0]!;
    onChange(next);
  };
  return (
    <fieldset className="filters">
      <legend>Which phone</legend>
      {filters.map((f, i) => (
        <div className="filter-row" key={i}>
          {i === 0 ? (
            <>
              <span className="filter-attr">platform</span>
              <span className="muted">is</span>
              <select aria-label="Platform" value={f.value} onChange={(e) => update(i, { value: e.target.value })}>
                <option value="android">Android</option>
                <option value="ios">iOS</option>
              </select>
            </>
          ) : (
            <>
              <select aria-label={`Filter ${i} attribute`} value={f.attribute} onChange={(e) => update(i, { attribute: e.target.value })}>
                <option value="name">name</option>
                <option value="version">version</option>
                <option value="serial">serial</option>
              </select>
              <select aria-label={`Filter ${i} operator`} value={f.operator} onChange={(e) => update(i, { operator: e.target.value })}>
                {FILTER_OPERATORS[f.attribute]!.map((op) => <option key={op} value={op}>{OPERATOR_LABELS[op]}</option>)}
              </select>
              <input
                aria-label={`Filter ${i} value`}
                value={f.value}
                required
                placeholder={f.attribute === 'version' ? 'e.g. 14' : f.attribute === 'serial' ? 'as the Fleet shows it' : 'e.g. Pixel'}
                onChange={(e) => update(i, { value: e.target.value })}
              />
              <button type="button" aria-label={`Remove filter ${i}`} onClick={() => onChange(filters.filter((_, j) => j !== i))}>Remove</button>
            </>
          )}
        </div>
      ))}
      <div className="button-row">
        <button type="button" onClick={() => onChange([...filters, { attribute: 'name', operator: 'CONTAINS', value: '' }])}>Add name filter</button>
        <button
          type="button"
          onClick={() => onChange([
            ...filters,
            { attribute: 'version', operator: 'GREATER_THAN_OR_EQUALS', value: '' },
            { attribute: 'version', operator: 'LESS_THAN', value: '' },
          ])}
        >
          Add version range
        </button>
      </div>
    </fieldset>
  );
}
