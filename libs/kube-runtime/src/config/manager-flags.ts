import { z } from 'zod';
import { parseBindAddress } from '../health/bind-address';
import { booleanFlag } from './flags';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Go-style durations as kube components take them: `500ms`, `15s`, `1m30s`, `2h`. */
export function parseDuration(text: string): number | undefined {
  if (!/^(\d+(\.\d+)?(ms|s|m|h))+$/.test(text)) return undefined;
  let total = 0;
  for (const m of text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) total += Number(m[1]) * (UNIT_MS[m[2] as string] ?? 0);
  return Math.round(total);
}

/** A duration flag parsed to milliseconds; the default is written as flag text (`15s`). */
export function durationFlag(defaultText: string) {
  return z
    .string()
    .transform((v, ctx) => {
      const ms = parseDuration(v);
      if (ms === undefined) {
        ctx.addIssue({ code: 'custom', message: `"${v}" is not a duration like 500ms, 15s, 1m30s` });
        return z.NEVER;
      }
      return ms;
    })
    .prefault(defaultText);
}

/** `host:port`, `:port`, or `0` to turn the server off. */
export function bindAddressFlag(defaultAddr: string) {
  return z
    .string()
    .refine(
      (v) => {
        try {
          parseBindAddress(v);
          return true;
        } catch {
          return false;
        }
      },
      { message: 'must be host:port, :port or 0' },
    )
    .default(defaultAddr);
}

/**
 * Flags every controller process shares, spelled as controller-runtime spells them. Spread into
 * an app's schema: `z.object({ ...managerFlagShape, publishInterval: ... })`.
 */
export const managerFlagShape = {
  kubeconfig: z.string().default('').describe('Path to a kubeconfig; empty means $KUBECONFIG, else the in-cluster service account'),
  leaderElect: booleanFlag(false).describe('Reconcile only while holding the leader Lease (run several replicas with this on)'),
  leaderElectionNamespace: z.string().default('').describe('Namespace of the leader Lease; empty means the pod namespace'),
  leaderElectLeaseDuration: durationFlag('15s').describe('How long standbys wait after the last renewal before taking over'),
  leaderElectRenewDeadline: durationFlag('10s').describe('How long the leader retries renewing before it stops leading'),
  leaderElectRetryPeriod: durationFlag('2s').describe('Pause between tries to acquire or renew the Lease'),
  metricsBindAddress: bindAddressFlag(':8080').describe(
    'Where /metrics is served (0 turns it off); over HTTPS with --metrics-auth=delegated, which also answers the probes there',
  ),
  healthProbeBindAddress: bindAddressFlag(':8081').describe(
    'Where /healthz, /readyz and /livez are served over plain HTTP, without a token as the kubelet probes (0 turns it off)',
  ),
  metricsAuth: z
    .enum(['delegated', 'none'])
    .default('delegated')
    .describe(
      "Who may read /metrics. delegated: HTTPS, and a bearer token the API server authenticates (TokenReview) and allows get on the non-resource URL /metrics (SubjectAccessReview; the chart's metrics-reader ClusterRole), else 401 or 403. none: plain HTTP open to anyone who reaches the port (local runs and benches only)",
    ),
  metricsTlsCertFile: z
    .string()
    .default('')
    .describe(
      'Serving certificate (PEM) of the metrics address with --metrics-auth=delegated; empty with --metrics-tls-private-key-file empty: self-signed, made at start',
    ),
  metricsTlsPrivateKeyFile: z.string().default('').describe('Private key (PEM) of --metrics-tls-cert-file'),
  gracefulShutdownTimeout: durationFlag('30s').describe('How long a stop may take to drain work before giving up'),
};

export const ManagerFlagsSchema = z.object(managerFlagShape);
export type ManagerFlags = z.infer<typeof ManagerFlagsSchema>;
