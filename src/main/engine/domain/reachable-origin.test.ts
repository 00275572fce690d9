import { describe, expect, it } from 'vitest';
import { reachableOrigin } from './reachable-origin.js';

const LAN = ['https://192.0.2.2:8443', 'https://lab-box:8443'];

describe('reachableOrigin', () => {
  it('a reader on loopback gets the LAN origin while sharing is on, else loopback', () => {
    for (const origin of ['http://127.0.0.1:4100', 'http://localhost:4100', 'http://app.localhost:4100', 'http://[::1]:4100', 'https://127.0.0.1:8443']) {
      expect(reachableOrigin(origin, LAN)).toBe('https://192.0.2.2:8443');
      expect(reachableOrigin(origin, [])).toBe(origin);
    }
  });

  it('a reader who came over the LAN keeps the origin they reached the lab at', () => {
    expect(reachableOrigin('https://lab-box:8443', LAN)).toBe('https://lab-box:8443');
    expect(reachableOrigin('https://10.1.2.3:8443', LAN)).toBe('https://10.1.2.3:8443');
    expect(reachableOrigin('https://lab.example.com', [])).toBe('https://lab.example.com');
  });
});
