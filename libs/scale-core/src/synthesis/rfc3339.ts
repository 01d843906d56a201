/** Go's zero time, `0001-01-01T00:00:00Z`: sandboxd's way of saying "no deadline". */
const ZERO_MS = new Date('0001-01-01T00:00:00Z').getTime();
/**
 * RFC3339 seconds in UTC on a day every month has (1-28); anything else goes through Date,
 * which rolls an impossible day such as Feb 31 over into the next month.
 */
const CANONICAL = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|1\d|2[0-8])T([01]\d|2[0-3]):[0-5]\d:[0-5]\dZ$/;

/**
 * RFC3339 in UTC with second precision (`2026-08-17T12:00:00Z`), sub-seconds truncated as Go's
 * RFC3339 formatting of a second-precision time does.
 */
export function formatRfc3339Seconds(d: Date): string {
  const ms = d.getTime();
  const truncated = new Date(ms - (((ms % 1000) + 1000) % 1000));
  return truncated.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * A wire timestamp normalised to RFC3339 seconds in UTC, or '' when it is absent, unparsable
 * or Go's zero time (all of which mean "not set").
 */
export function normalizeTimestamp(value: string | Date | undefined | null): string {
  if (value === undefined || value === null || value === '') return '';
  // already in the form we serve (what publishers write): every list item passes here, so no Date round trip
  if (typeof value === 'string' && CANONICAL.test(value)) return value < '0001-01-01T00:00:01Z' ? '' : value;
  const d = value instanceof Date ? value : new Date(value);
  const ms = d.getTime();
  if (Number.isNaN(ms) || ms <= ZERO_MS) return '';
  return formatRfc3339Seconds(d);
}
