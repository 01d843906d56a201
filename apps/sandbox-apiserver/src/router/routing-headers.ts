import { RouterError } from './router-errors';

/** Where one request goes: a served Sandbox, a port of its guest, and how long the relay may take. */
export interface RoutingTarget {
  readonly namespace: string;
  /** The Sandbox's name (agent-sandbox's client sends it as X-Sandbox-ID). */
  readonly name: string;
  readonly port: number;
  /** Until the guest's response headers arrive, and then between two reads of its body. */
  readonly timeoutMs: number;
}

export const DEFAULT_NAMESPACE = 'default';
export const DEFAULT_PORT = 8888;
/** agent-sandbox's router bounds every proxied request by 180 s (its --proxy-timeout). */
export const DEFAULT_PROXY_TIMEOUT_MS = 180_000;

/** The routing headers; each is stripped before the request goes on. */
export const ROUTING_HEADER_PREFIX = 'x-sandbox-';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DECIMAL = /^\d{1,5}$/;
const SECONDS = /^\d{1,9}(\.\d{1,9})?$/;

/** Every header value as sent, one entry per header line (Node's `headersDistinct`). */
export type DistinctHeaders = NodeJS.Dict<string[]>;

/** The header's one value, undefined when absent; two lines of one routing header are refused rather than picked from. */
function single(headers: DistinctHeaders, name: string): string | undefined {
  const values = headers[name];
  if (values === undefined || values.length === 0) return undefined;
  if (values.length > 1) throw new RouterError(400, `${display(name)} header is given more than once.`);
  return values[0]?.trim();
}

const DISPLAY: Readonly<Record<string, string>> = {
  'x-sandbox-id': 'X-Sandbox-ID',
  'x-sandbox-namespace': 'X-Sandbox-Namespace',
  'x-sandbox-port': 'X-Sandbox-Port',
  'x-sandbox-timeout': 'X-Sandbox-Timeout',
};
const display = (name: string): string => DISPLAY[name] ?? name;

function dnsLabel(headers: DistinctHeaders, name: string, fallback: string | undefined): string {
  const v = single(headers, name) ?? fallback;
  if (v === undefined || v === '') throw new RouterError(400, `${display(name)} header is required.`);
  // the value ends up in a log line and a detail: it is quoted only once it is known to be a plain label
  if (!DNS_LABEL.test(v))
    throw new RouterError(400, `Invalid ${display(name)}: must be a DNS label (lower-case a-z, 0-9 and '-', at most 63).`);
  return v;
}

function port(headers: DistinctHeaders): number {
  const v = single(headers, 'x-sandbox-port');
  if (v === undefined || v === '') return DEFAULT_PORT;
  const n = DECIMAL.test(v) ? Number(v) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > 65535)
    throw new RouterError(400, 'Invalid port format: X-Sandbox-Port must be an integer from 1 to 65535.');
  return n;
}

/** Seconds as the Python client writes them (`60`, `65.0`), at most `maxMs`; absent means `maxMs`. */
function timeout(headers: DistinctHeaders, maxMs: number): number {
  const v = single(headers, 'x-sandbox-timeout');
  if (v === undefined || v === '') return maxMs;
  const ms = SECONDS.test(v) ? Math.ceil(Number(v) * 1000) : NaN;
  if (!Number.isFinite(ms) || ms <= 0)
    throw new RouterError(400, 'Invalid timeout format: X-Sandbox-Timeout must be a positive number of seconds.');
  return Math.min(ms, maxMs);
}

/**
 * The target of a request from its routing headers: X-Sandbox-ID (required), X-Sandbox-Namespace
 * (default `default`), X-Sandbox-Port (default 8888) and X-Sandbox-Timeout (seconds, capped at
 * `maxTimeoutMs`). X-Sandbox-Pod-IP is not read: a microVM has no pod, its guest is reached
 * through its node whatever address a caller names. A bad header is a 400.
 */
export function parseRoutingHeaders(headers: DistinctHeaders, maxTimeoutMs: number = DEFAULT_PROXY_TIMEOUT_MS): RoutingTarget {
  return {
    name: dnsLabel(headers, 'x-sandbox-id', undefined),
    namespace: dnsLabel(headers, 'x-sandbox-namespace', DEFAULT_NAMESPACE),
    port: port(headers),
    timeoutMs: timeout(headers, maxTimeoutMs),
  };
}
