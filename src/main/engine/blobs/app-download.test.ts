import { describe, expect, it } from 'vitest';
import { refusedAddress } from './app-download.js';

describe('refusedAddress: where the lab downloads an app from', () => {
  const own = ['127.0.0.1', '::1', '192.168.1.20', 'fe80::1%eth0'];

  it.each(['8.8.8.8', '10.1.2.3', '192.168.1.21', '172.16.0.9', '100.64.0.1', '2a00:1450:4001::1', 'fd12:3456::1'])('allows %s', (address) => {
    expect(refusedAddress(address, own)).toBeUndefined();
  });

  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.8.9.10', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['0.0.0.0', 'reserved'],
    ['169.254.169.254', 'link-local'],
    ['fe80::1', 'link-local'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['2002:7f00:1::1', 'reserved'],
    ['192.168.1.20', "lab box's own"],
    ['::ffff:192.168.1.20', "lab box's own"],
    ['not-an-ip', 'not an IP'],
  ])('refuses %s', (address, why) => {
    expect(refusedAddress(address, own)).toContain(why);
  });
});
