import { ConfigError, durationFlag, managerFlagShape } from '@sandbox-scale/kube-runtime';
import { LIMITS } from '@sandbox-scale/scale-core';
import { normalizeBaseUrl } from '@sandbox-scale/sandboxd-client';
import { z } from 'zod';

/** Flags of inventory-publisher (env fallback SANDBOX_SCALE_<FLAG>). */
export const InventoryPublisherFlagsSchema = z.object({
  ...managerFlagShape,
  nodeName: z
    .string({ error: 'is required (the chart sets it from the downward API, spec.nodeName)' })
    .min(1, 'is required (the chart sets it from the downward API, spec.nodeName)')
    .describe('Name of this node; the NodeInventory is named after it'),
  sandboxdUrl: z.string().min(1).default('http://127.0.0.1:7777').describe("URL of this node's sandboxd"),
  advertiseAddress: z
    .string()
    .default('')
    .describe("host:port other components use to reach this node's sandboxd; empty means the host:port of --sandboxd-url"),
  publishInterval: durationFlag(`${LIMITS.inventoryPublishIntervalMs / 1000}s`).describe(
    'How often sandboxd is read and the NodeInventory refreshed (a jitter of up to 10% is added)',
  ),
  inventoryLabels: z
    .string()
    .default('')
    .transform((v, ctx) => {
      const out: Record<string, string> = {};
      for (const pair of v
        .split(',')
        .map((x) => x.trim())
        .filter((x) => x !== '')) {
        const eq = pair.indexOf('=');
        if (eq <= 0) ctx.addIssue({ code: 'custom', message: `"${pair}" is not key=value` });
        else out[pair.slice(0, eq)] = pair.slice(eq + 1);
      }
      return out;
    })
    .describe('Labels put on the NodeInventory, k=v,k2=v2 (e.g. a fleet label a warmpool-driver selects with --node-inventory-selector)'),
  fleetTokenFile: z
    .string()
    .default('')
    .describe('File holding the sandboxd fleet token (a mounted Secret); env SANDBOX_SCALE_FLEET_TOKEN otherwise'),
  sandboxdTokenFile: z
    .string()
    .default('')
    .describe(
      "File holding this node's own sandboxd root token (per-node tokens: the chart mounts it from the node); wins over --fleet-token-file, so the publisher holds no other node's credentials",
    ),
  noticeService: z
    .string()
    .default('')
    .refine((v) => v === '' || /^[a-z0-9]([-a-z0-9]*[a-z0-9])?\/[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(v), 'must be <namespace>/<name>')
    .describe(
      '<namespace>/<name> of the sandbox-apiserver Service: each change on the node is told to every replica its EndpointSlices list, between publishes. Empty = off (changes show at the next publish)',
    ),
  noticeCaFile: z
    .string()
    .default('')
    .describe(
      "CA (PEM) the sandbox-apiserver replicas' serving certificate chains to, followed as it changes; with --notice-service, this or --notice-ca-apiservice",
    ),
  noticeCaApiservice: z
    .string()
    .default('')
    .refine(
      (v) => v === '' || /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$/.test(v),
      'must be an APIService name (<version>.<group>)',
    )
    .describe(
      "APIService whose caBundle the replicas' serving certificate chains to, watched so a CA rotation is trusted without a restart: for a publisher in a namespace of its own, which cannot mount the serving Secret. With --notice-service, this or --notice-ca-file",
    ),
  noticeInterval: durationFlag('250ms').describe('With --notice-service: how often sandboxd is read for changes to tell (no etcd write)'),
});
export type InventoryPublisherFlags = z.infer<typeof InventoryPublisherFlagsSchema>;

/** What the publisher runs with, resolved from its flags and the fleet token. */
export interface PublisherConfig {
  nodeName: string;
  sandboxdUrl: string;
  advertiseAddress: string;
  publishIntervalMs: number;
  /** Labels of the NodeInventory (a driver may select its fleet by them). */
  labels?: Record<string, string>;
  /** '' when none was configured: sandboxd then answers 401 and the inventory goes stale. */
  fleetToken: string;
  /** How often sandboxd is read for changes to tell sandbox-apiserver (with a notifier only); 0 = at publishes only. */
  noticeIntervalMs?: number;
}

/** Where node notices go (docs/adr/0007), from --notice-service and --notice-ca-file or --notice-ca-apiservice. */
export interface NoticeTarget {
  service: { namespace: string; name: string };
  /** The CA to trust from the start; absent when it comes from an APIService (trusted once read). */
  caPem?: string;
  /** Where caPem was read: followed, so a CA rotation is trusted without a restart. */
  caFile?: string;
  /** The APIService whose caBundle is the CA, watched for the same reason. */
  caApiService?: string;
}

/** The default advertise address: host:port of the sandboxd URL, with the scheme's port when none is given. */
export function advertiseAddressOf(sandboxdUrl: string): string {
  const url = new URL(normalizeBaseUrl(sandboxdUrl));
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  // URL.hostname keeps the brackets of an IPv6 literal, so this is a valid host:port either way.
  return `${url.hostname}:${port}`;
}

/** The publisher's settings from its flags and the fleet token they name (read once, by main.ts). */
export function publisherConfigFromFlags(flags: InventoryPublisherFlags, fleetToken: string): PublisherConfig {
  return {
    nodeName: flags.nodeName,
    sandboxdUrl: flags.sandboxdUrl,
    advertiseAddress: flags.advertiseAddress || advertiseAddressOf(flags.sandboxdUrl),
    publishIntervalMs: flags.publishInterval,
    labels: flags.inventoryLabels,
    fleetToken,
    noticeIntervalMs: flags.noticeInterval,
  };
}

/** The notice target of the flags; undefined when --notice-service is empty. Reads --notice-ca-file. */
export function noticeTargetOfFlags(flags: InventoryPublisherFlags, readFile: (path: string) => string): NoticeTarget | undefined {
  if (flags.noticeService === '') return undefined;
  const [namespace = '', name = ''] = flags.noticeService.split('/');
  const service = { namespace, name };
  if (flags.noticeCaFile !== '' && flags.noticeCaApiservice !== '')
    throw new ConfigError('and --notice-ca-apiservice are exclusive: the CA comes from one of them', 'noticeCaFile');
  if (flags.noticeCaApiservice !== '') return { service, caApiService: flags.noticeCaApiservice };
  if (flags.noticeCaFile === '') throw new ConfigError('(or --notice-ca-apiservice) is required with --notice-service', 'noticeCaFile');
  return { service, caPem: readFile(flags.noticeCaFile), caFile: flags.noticeCaFile };
}
