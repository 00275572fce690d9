import type { Registry } from 'prom-client';
import type { PhoneSource } from '../fleet/types.js';
import type { Stores } from '../store/index.js';
import type { Providers } from './providers.js';

/**
 * The lab in Prometheus' text format, for the monitoring a lab already runs: phones per host and state,
 * allocations by status, the queue, and each provider's health and round-trip time. Every gauge is read at scrape
 * time from the fleet and the store, so nothing here has to be kept in step with them. prom-client loads with the
 * first scrape: a lab nobody monitors does not parse it at every start.
 */
export class Metrics {
  private registry: Promise<Registry> | undefined;

  constructor(
    private readonly stores: Pick<Stores, 'devices'>,
    private readonly fleet: Pick<PhoneSource, 'list'>,
    private readonly providers: Pick<Providers, 'status'>,
  ) {}

  /** The exposition text and its content type. */
  async scrape(): Promise<{ contentType: string; text: string }> {
    this.registry ??= this.build();
    const registry = await this.registry;
    return { contentType: registry.contentType, text: await registry.metrics() };
  }

  private async build(): Promise<Registry> {
    // prom-client is CommonJS, and its module.exports is the one thing every loader of this engine gives as the
    // default export: Node's own (the tests, and the desktop build, which leaves packages in node_modules) and the
    // bundle's chunk (npm run serve), which has no named exports at all.
    const { default: promClient } = await import('prom-client');
    const { Gauge, Registry } = promClient;
    const { stores, fleet, providers } = this;
    const registry = new Registry();
    const registers = [registry];
    new Gauge({
      name: 'benchtop_phones',
      help: 'Phones in the fleet, by host (a provider\'s name, or "local" for this workstation\'s USB), platform and state.',
      labelNames: ['host', 'platform', 'state'],
      registers,
      collect() {
        this.reset();
        for (const phone of fleet.list()) this.inc({ host: phone.host ?? 'local', platform: phone.platform, state: phone.state });
      },
    });
    new Gauge({
      name: 'benchtop_allocations',
      help: 'Device allocations not yet released, by status (queued, provisioning, in_use, offline).',
      labelNames: ['status'],
      registers,
      collect() {
        this.reset();
        for (const status of ['queued', 'provisioning', 'in_use', 'offline']) this.set({ status }, 0);
        for (const row of stores.devices.active()) this.inc({ status: row.status });
      },
    });
    new Gauge({
      name: 'benchtop_queue_length',
      help: 'Allocations waiting for a free matching phone.',
      registers,
      collect() {
        this.set(stores.devices.active().filter((row) => row.status === 'queued').length);
      },
    });
    new Gauge({
      name: 'benchtop_provider_up',
      help: 'Whether a provider answered its last check (1) or not (0).',
      labelNames: ['provider'],
      registers,
      collect() {
        this.reset();
        for (const p of providers.status()) this.set({ provider: p.name }, p.health.state === 'up' ? 1 : 0);
      },
    });
    new Gauge({
      name: 'benchtop_provider_round_trip_seconds',
      help: 'A provider\'s last check: a new SSH channel and its adb server\'s version.',
      labelNames: ['provider'],
      registers,
      collect() {
        this.reset();
        for (const p of providers.status()) if (p.health.rttMs !== null) this.set({ provider: p.name }, p.health.rttMs / 1000);
      },
    });
    return registry;
  }
}
