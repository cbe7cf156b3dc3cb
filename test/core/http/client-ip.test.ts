import type { IncomingMessage } from 'node:http';
import { expect } from 'chai';
import { clientIp, ipBucket } from '../../../src/core/http/client-ip.js';

const request = (remoteAddress: string | undefined, forwardedFor?: string | string[]) =>
  ({
    socket: { remoteAddress },
    headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor },
  }) as unknown as IncomingMessage;

describe('clientIp', () => {
  it('is the socket address when no proxy hop is trusted, whatever X-Forwarded-For says', () => {
    expect(clientIp(request('10.0.0.9', '198.51.100.1'), 0)).to.equal('10.0.0.9');
  });

  it('is the left-most of the last `hops` X-Forwarded-For entries', () => {
    const req = request('10.0.0.9', '198.51.100.1, 203.0.113.2 ,192.0.2.3');
    expect(clientIp(req, 1)).to.equal('192.0.2.3');
    expect(clientIp(req, 2)).to.equal('203.0.113.2');
    expect(clientIp(req, 3)).to.equal('198.51.100.1');
  });

  it('takes the first entry when fewer entries than hops are given', () => {
    expect(clientIp(request('10.0.0.9', '198.51.100.1, 203.0.113.2'), 5)).to.equal('198.51.100.1');
  });

  it('reads repeated headers as one comma-separated list', () => {
    const req = request('10.0.0.9', ['198.51.100.1, 203.0.113.2', '192.0.2.3']);
    expect(clientIp(req, 1)).to.equal('192.0.2.3');
    expect(clientIp(req, 3)).to.equal('198.51.100.1');
  });

  it('falls back to the socket address without the header or with an empty entry', () => {
    expect(clientIp(request('10.0.0.9'), 1)).to.equal('10.0.0.9');
    expect(clientIp(request('10.0.0.9', '198.51.100.1, '), 1)).to.equal('10.0.0.9');
    expect(clientIp(request(undefined), 0)).to.equal('');
  });
});

describe('ipBucket', () => {
  it('keeps an IPv4 address as it is', () => {
    expect(ipBucket('203.0.113.7')).to.equal('203.0.113.7');
  });

  it('counts an IPv4-mapped IPv6 address as the IPv4 address', () => {
    expect(ipBucket('::ffff:203.0.113.7')).to.equal('203.0.113.7');
    expect(ipBucket('::FFFF:203.0.113.7')).to.equal('203.0.113.7');
  });

  it('counts an IPv6 address as its /64, in lower case without leading zeros', () => {
    expect(ipBucket('2001:db8:1:2:3:4:5:6')).to.equal('2001:db8:1:2::/64');
    expect(ipBucket('2001:0DB8:0001:0002:ffff:ffff:ffff:ffff')).to.equal('2001:db8:1:2::/64');
  });

  it('expands `::` before taking the /64', () => {
    expect(ipBucket('2001:db8::1')).to.equal('2001:db8:0:0::/64');
    expect(ipBucket('2001:db8:1:2::')).to.equal('2001:db8:1:2::/64');
    expect(ipBucket('::1')).to.equal('0:0:0:0::/64');
    expect(ipBucket('::')).to.equal('0:0:0:0::/64');
  });

  it('counts an embedded IPv4 address as two groups', () => {
    expect(ipBucket('64:ff9b::192.0.2.33')).to.equal('64:ff9b:0:0::/64');
    expect(ipBucket('1:2:3:4:5:6:192.0.2.33')).to.equal('1:2:3:4::/64');
  });

  it('drops a zone index', () => {
    expect(ipBucket('fe80::1%eth0')).to.equal('fe80:0:0:0::/64');
  });

  it('keeps text that is no IPv6 address as it is', () => {
    expect(ipBucket('not:an:address')).to.equal('not:an:address');
  });
});

describe('client address buckets', () => {
  for (const [ip, bucket] of [
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['2001:db8:1:2::1', '2001:db8:1:2::/64'],
    ['2001:0db8:0001:0002:ffff:ffff:ffff:ffff', '2001:db8:1:2::/64'],
    ['2001:db8::', '2001:db8:0:0::/64'],
    ['64:ff9b::203.0.113.7', '64:ff9b:0:0::/64'],
  ]) {
    it(`${ip} counts as ${bucket}`, () => expect(ipBucket(ip!)).to.equal(bucket));
  }
});
