import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePortPair } from './tunnel.js';

const bindable = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });

describe("go-ios's ports", () => {
  it('are a free pair below the range connections take their source ports from, so that go-ios can bind them again', async () => {
    const ephemeral = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePortPair()));
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(20000);
      expect(port + 1).toBeLessThan(ephemeral);
    }
    expect(new Set(ports).size).toBeGreaterThan(1);
    expect(await bindable(ports[0]!)).toBe(true);
    expect(await bindable(ports[0]! + 1)).toBe(true);
  });
});
