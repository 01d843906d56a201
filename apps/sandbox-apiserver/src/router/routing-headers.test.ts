import { asRouterError } from './router-errors';
import { DEFAULT_PROXY_TIMEOUT_MS, parseRoutingHeaders, type DistinctHeaders } from './routing-headers';

/** The 400 detail a header set is refused with, or the target it parses to. */
function outcome(headers: DistinctHeaders, maxMs?: number): unknown {
  try {
    return parseRoutingHeaders(headers, maxMs);
  } catch (err) {
    const e = asRouterError(err);
    return { status: e?.status, detail: e?.detail };
  }
}

describe('parseRoutingHeaders', () => {
  it('takes the namespace default, port 8888 and the proxy timeout when only X-Sandbox-ID is sent', () => {
    expect(parseRoutingHeaders({ 'x-sandbox-id': ['py-1'] })).toEqual({
      name: 'py-1',
      namespace: 'default',
      port: 8888,
      timeoutMs: DEFAULT_PROXY_TIMEOUT_MS,
    });
  });

  it('reads namespace, port and the timeout in seconds as the Python client writes them (60, 65.0)', () => {
    const h = (timeout: string): DistinctHeaders => ({
      'x-sandbox-id': ['s1'],
      'x-sandbox-namespace': ['team-a'],
      'x-sandbox-port': ['8080'],
      'x-sandbox-timeout': [timeout],
    });
    expect(parseRoutingHeaders(h('60'))).toEqual({ name: 's1', namespace: 'team-a', port: 8080, timeoutMs: 60_000 });
    expect(parseRoutingHeaders(h('65.0')).timeoutMs).toBe(65_000);
    expect(parseRoutingHeaders(h('0.25')).timeoutMs).toBe(250);
  });

  it('caps X-Sandbox-Timeout at the proxy timeout', () => {
    const h = { 'x-sandbox-id': ['s1'], 'x-sandbox-timeout': ['3600'] };
    expect(parseRoutingHeaders(h).timeoutMs).toBe(180_000);
    expect(parseRoutingHeaders(h, 30_000).timeoutMs).toBe(30_000);
  });

  it('ignores X-Sandbox-Pod-IP: a microVM is reached through its node whatever address is named', () => {
    expect(parseRoutingHeaders({ 'x-sandbox-id': ['s1'], 'x-sandbox-pod-ip': ['10.0.0.9'] })).toEqual(
      parseRoutingHeaders({ 'x-sandbox-id': ['s1'] }),
    );
  });

  it('answers 400 for a missing or malformed X-Sandbox-ID or X-Sandbox-Namespace', () => {
    expect(outcome({})).toEqual({ status: 400, detail: 'X-Sandbox-ID header is required.' });
    expect(outcome({ 'x-sandbox-id': [''] })).toEqual({ status: 400, detail: 'X-Sandbox-ID header is required.' });
    for (const bad of ['UPPER', 'a.b', '-lead', 'trail-', 'a/../b', 'x\u0000y', 'a'.repeat(64), '__proto__'])
      expect({ bad, ...(outcome({ 'x-sandbox-id': [bad] }) as object) }).toEqual({
        bad,
        status: 400,
        detail: "Invalid X-Sandbox-ID: must be a DNS label (lower-case a-z, 0-9 and '-', at most 63).",
      });
    expect(outcome({ 'x-sandbox-id': ['s1'], 'x-sandbox-namespace': ['kube.system'] })).toEqual({
      status: 400,
      detail: "Invalid X-Sandbox-Namespace: must be a DNS label (lower-case a-z, 0-9 and '-', at most 63).",
    });
  });

  it('answers 400 for a port outside 1-65535 or not a decimal integer', () => {
    for (const bad of ['0', '65536', '-1', '80.5', '0x50', 'http', '99999999'])
      expect({ bad, ...(outcome({ 'x-sandbox-id': ['s1'], 'x-sandbox-port': [bad] }) as object) }).toEqual({
        bad,
        status: 400,
        detail: 'Invalid port format: X-Sandbox-Port must be an integer from 1 to 65535.',
      });
    expect(parseRoutingHeaders({ 'x-sandbox-id': ['s1'], 'x-sandbox-port': ['65535'] }).port).toBe(65535);
    expect(parseRoutingHeaders({ 'x-sandbox-id': ['s1'], 'x-sandbox-port': ['1'] }).port).toBe(1);
  });

  it('answers 400 for a timeout that is not a positive number of seconds', () => {
    for (const bad of ['0', '-5', 'soon', '1e3', 'NaN', 'Infinity'])
      expect({ bad, ...(outcome({ 'x-sandbox-id': ['s1'], 'x-sandbox-timeout': [bad] }) as object) }).toEqual({
        bad,
        status: 400,
        detail: 'Invalid timeout format: X-Sandbox-Timeout must be a positive number of seconds.',
      });
  });

  it('refuses a routing header sent twice instead of picking one of the values', () => {
    expect(outcome({ 'x-sandbox-id': ['a', 'b'] })).toEqual({ status: 400, detail: 'X-Sandbox-ID header is given more than once.' });
    expect(outcome({ 'x-sandbox-id': ['a'], 'x-sandbox-namespace': ['n1', 'n2'] })).toEqual({
      status: 400,
      detail: 'X-Sandbox-Namespace header is given more than once.',
    });
  });
});
