import { addressIPs, splitHostPort } from './address-ips';

describe('addressIPs', () => {
  it.each([
    ['', undefined],
    [undefined, undefined],
    ['10.1.2.3:7777', ['10.1.2.3']],
    ['10.1.2.3', ['10.1.2.3']],
    ['[::1]:80', ['::1']],
    ['::1', ['::1']],
    ['fe80::1:7777', ['fe80::1:7777']],
    [':7777', [':7777']],
    ['node-a.example:7777', ['node-a.example']],
    ['[::1]', ['[::1]']],
    ['[::1]:80:90', ['[::1]:80:90']],
  ])('%p -> %p', (addr, expected) => {
    expect(addressIPs(addr)).toEqual(expected);
  });
});

describe('splitHostPort (Go net.SplitHostPort)', () => {
  it.each([
    ['h:1', { host: 'h', port: '1' }],
    ['[::1]:80', { host: '::1', port: '80' }],
    [':80', { host: '', port: '80' }],
    ['h:', { host: 'h', port: '' }],
    ['h', undefined],
    ['a:b:c', undefined],
    ['[::1]', undefined],
    ['[::1]x:80', undefined],
    ['[a[b]:80', undefined],
    ['h]:80', undefined],
    ['h[:80', undefined],
  ])('%p -> %p', (addr, expected) => {
    expect(splitHostPort(addr)).toEqual(expected);
  });
});
