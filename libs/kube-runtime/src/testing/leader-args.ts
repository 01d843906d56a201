/**
 * Command-line flags of an app process that leads through a Lease in `namespace` (the shared
 * manager flags), with short durations so that a takeover after a kill is quick.
 */
export function leaderElectionArgs(namespace: string): string[] {
  return [
    '--leader-elect=true',
    '--leader-election-namespace',
    namespace,
    '--leader-elect-lease-duration',
    '4s',
    '--leader-elect-renew-deadline',
    '3s',
    '--leader-elect-retry-period',
    '500ms',
  ];
}
