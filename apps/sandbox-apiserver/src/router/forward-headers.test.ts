import { forwardedRequestHeaders, forwardedResponseHeaders, forwardedUpgradeHeaders } from './forward-headers';

const pairs = (raw: readonly string[]): [string, string][] => {
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) out.push([raw[i] ?? '', raw[i + 1] ?? '']);
  return out;
};

describe('forwardedRequestHeaders', () => {
  // prettier-ignore
  const sent = [
    'Host', 'router.example:8080',
    'Authorization', 'Bearer tenant-token',
    'X-Sandbox-ID', 's1',
    'X-Sandbox-Namespace', 'team-a',
    'X-Sandbox-Port', '8888',
    'X-Sandbox-Timeout', '60',
    'X-Sandbox-Pod-IP', '10.0.0.9',
    'Content-Type', 'application/json',
    'Content-Length', '17',
    'Connection', 'keep-alive, X-Hop',
    'Keep-Alive', 'timeout=5',
    'X-Hop', 'named by Connection',
    'Proxy-Authorization', 'Basic x',
    'TE', 'trailers',
    'Expect', '100-continue',
    'Accept', 'a',
    'Accept', 'b',
  ];

  it('strips the routing, hop-by-hop, Host and Authorization headers and names the guest loopback port as Host', () => {
    expect(pairs(forwardedRequestHeaders(sent, 8888, false))).toEqual([
      ['Content-Type', 'application/json'],
      ['Content-Length', '17'],
      ['Accept', 'a'],
      ['Accept', 'b'],
      ['Host', '127.0.0.1:8888'],
    ]);
  });

  it('keeps a chunked body chunked without passing the caller’s Transfer-Encoding line itself on', () => {
    expect(pairs(forwardedRequestHeaders(['Transfer-Encoding', 'gzip, chunked', 'X-Sandbox-ID', 's1'], 3000, false))).toEqual([
      ['Host', '127.0.0.1:3000'],
      ['Transfer-Encoding', 'chunked'],
    ]);
  });

  it('keeps Upgrade on an upgrade request only', () => {
    const ws = ['Connection', 'Upgrade', 'Upgrade', 'websocket', 'Sec-WebSocket-Key', 'k', 'X-Sandbox-ID', 's1'];
    expect(pairs(forwardedRequestHeaders(ws, 8888, true))).toEqual([
      ['Sec-WebSocket-Key', 'k'],
      ['Host', '127.0.0.1:8888'],
      ['Connection', 'Upgrade'],
      ['Upgrade', 'websocket'],
    ]);
    expect(pairs(forwardedRequestHeaders(['Upgrade', 'h2c'], 8888, false))).toEqual([['Host', '127.0.0.1:8888']]);
  });
});

describe('forwardedResponseHeaders', () => {
  it('passes the guest’s headers, duplicates included, without its connection’s own', () => {
    // prettier-ignore
    const raw = [
      'Content-Type', 'text/plain',
      'Set-Cookie', 'a=1',
      'Set-Cookie', 'b=2',
      'Transfer-Encoding', 'chunked',
      'Connection', 'close',
      'Keep-Alive', 'timeout=5',
    ];
    expect(pairs(forwardedResponseHeaders(raw))).toEqual([
      ['Content-Type', 'text/plain'],
      ['Set-Cookie', 'a=1'],
      ['Set-Cookie', 'b=2'],
    ]);
  });

  it('keeps Connection and Upgrade on a 101 so the caller’s side switches too', () => {
    const raw = ['Upgrade', 'websocket', 'Connection', 'Upgrade', 'Sec-WebSocket-Accept', 'x'];
    expect(pairs(forwardedUpgradeHeaders(raw))).toEqual([
      ['Sec-WebSocket-Accept', 'x'],
      ['Connection', 'Upgrade'],
      ['Upgrade', 'websocket'],
    ]);
  });
});
