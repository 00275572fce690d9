import { describe, expect, it } from 'vitest';
import { ipv6Bytes } from './tunnel.js';
import { launchOf, manualSteps, wdaStrategy } from './wda-launcher.js';

describe('how the lab can start WDA, by iOS version and host', () => {
  it('before 17 over lockdown anywhere; 17+ with devicectl where there is an xcrun; 17.4.1+ through the tunnel elsewhere', () => {
    const cases: Array<[string, string | null, boolean, string]> = [
      ['16.7.8', null, true, 'testmanagerd'],
      ['16.7.8', 'xcrun', true, 'testmanagerd'],
      ['17.0', null, true, 'none'],
      ['17.2.1', null, true, 'none'],
      ['17.3.1', 'xcrun', true, 'devicectl'],
      // go-ios 1.2.0 refuses 17.4.0 itself (its check is "greater than 17.4.0").
      ['17.4', null, true, 'none'],
      ['17.4.0', null, true, 'none'],
      ['17.4.1', null, true, 'tunnel'],
      ['17.5.1', null, true, 'tunnel'],
      ['18.1', null, true, 'tunnel'],
      ['26.0', null, true, 'tunnel'],
      ['18.1', 'xcrun', true, 'devicectl'],
      ['18.1', null, false, 'none'],
    ];
    for (const [version, xcrun, goIos, strategy] of cases) expect([version, wdaStrategy(version, xcrun, goIos)]).toEqual([version, strategy]);
    expect(launchOf('testmanagerd')).toBe('lockdown');
    expect(launchOf('tunnel')).toBe('tunnel');
  });

  it('the steps name 17.0-17.3 and what works for it, and 17.4.0 what go-ios needs', () => {
    const early = manualSteps('U', '17.2.1', 'com.example.runner');
    expect(early).toContain('iOS 17.0-17.3');
    expect(early).toContain('Mac provider');
    expect(early).toContain('17.4 or later');
    expect(manualSteps('U', '17.4', 'com.example.runner')).toContain('17.4.1 or later');
  });

  it('an IPv6 address as the 16 bytes go-ios\'s proxy reads', () => {
    expect(ipv6Bytes('fd7b:4a32:24e3::1').toString('hex')).toBe('fd7b4a3224e300000000000000000001');
    expect(ipv6Bytes('fd00:1:2:3:4:5:6:7').toString('hex')).toBe('fd000001000200030004000500060007');
    expect(ipv6Bytes('::1').toString('hex')).toBe('00000000000000000000000000000001');
  });
});
