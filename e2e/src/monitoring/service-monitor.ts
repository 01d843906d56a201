import { z } from 'zod';

// What prometheus-operator makes of a ServiceMonitor, as a plain Prometheus scrape configuration:
// endpoints discovery in the monitor's namespaces, kept by the Service's labels and the endpoint's
// port name, with the endpoint's scheme, path, TLS settings, bearer token and honorLabels, and the
// operator's target labels (job = the Service's name, namespace, service, pod, endpoint). So a
// test's Prometheus scrapes what a cluster's would, without the operator. Debian's Prometheus is
// built without Kubernetes discovery, so discovery is a file (file_sd) holding what endpoints
// discovery would: every EndpointSlice address with the same __meta_kubernetes_* labels, which
// the operator's relabelings then keep or drop exactly as they would.

const EndpointSchema = z.object({
  port: z.string(),
  path: z.string().default('/metrics'),
  interval: z.string().optional(),
  honorLabels: z.boolean().default(false),
  scheme: z.enum(['http', 'https']).default('http'),
  bearerTokenFile: z.string().optional(),
  tlsConfig: z
    .object({
      serverName: z.string().optional(),
      insecureSkipVerify: z.boolean().optional(),
      ca: z.object({ secret: z.object({ name: z.string(), key: z.string() }) }).optional(),
    })
    .optional(),
});

export const ServiceMonitorSchema = z.object({
  apiVersion: z.literal('monitoring.coreos.com/v1'),
  kind: z.literal('ServiceMonitor'),
  metadata: z.object({ name: z.string(), namespace: z.string() }),
  spec: z.object({
    selector: z.object({ matchLabels: z.record(z.string(), z.string()) }),
    namespaceSelector: z.object({ matchNames: z.array(z.string()) }).optional(),
    endpoints: z.array(EndpointSchema),
  }),
});
export type ServiceMonitor = z.infer<typeof ServiceMonitorSchema>;

export interface ScrapeContext {
  /** The file_sd file endpointTargetGroups' output is written to. */
  targetsFile: string;
  /** The token a bearerTokenFile stands for (the scraper's ServiceAccount, bound to the metrics reader). */
  tokenFile: string;
  /** The file holding a Secret's key, for tlsConfig.ca.secret (read from the monitor's namespace). */
  caFile(namespace: string, secret: string, key: string): string;
  /** Replaces each endpoint's interval (a test scrapes faster than the chart's 30s). */
  interval?: string;
}

/** Prometheus' name of a Kubernetes label in discovery metadata. */
const metaLabel = (label: string): string => label.replace(/[^a-zA-Z0-9_]/g, '_');

/** One scrape configuration per endpoint of the monitor, as prometheus-operator generates them. */
export function scrapeConfigsOfServiceMonitor(sm: ServiceMonitor, ctx: ScrapeContext): object[] {
  const namespaces = sm.spec.namespaceSelector?.matchNames ?? [sm.metadata.namespace];
  return sm.spec.endpoints.map((ep, i) => {
    const tls = ep.tlsConfig;
    return {
      job_name: `serviceMonitor/${sm.metadata.namespace}/${sm.metadata.name}/${i}`,
      honor_labels: ep.honorLabels,
      metrics_path: ep.path,
      scheme: ep.scheme,
      ...((ctx.interval ?? ep.interval) !== undefined ? { scrape_interval: ctx.interval ?? ep.interval } : {}),
      file_sd_configs: [{ files: [ctx.targetsFile], refresh_interval: '5s' }],
      ...(ep.bearerTokenFile !== undefined ? { authorization: { credentials_file: ctx.tokenFile } } : {}),
      ...(tls !== undefined
        ? {
            tls_config: {
              ...(tls.insecureSkipVerify === true ? { insecure_skip_verify: true } : {}),
              ...(tls.serverName !== undefined ? { server_name: tls.serverName } : {}),
              ...(tls.ca !== undefined ? { ca_file: ctx.caFile(sm.metadata.namespace, tls.ca.secret.name, tls.ca.secret.key) } : {}),
            },
          }
        : {}),
      relabel_configs: [
        // endpoints discovery's namespaces
        { source_labels: ['__meta_kubernetes_namespace'], regex: namespaces.join('|'), action: 'keep' },
        ...Object.entries(sm.spec.selector.matchLabels).map(([k, v]) => ({
          source_labels: [`__meta_kubernetes_service_label_${metaLabel(k)}`],
          regex: v,
          action: 'keep',
        })),
        { source_labels: ['__meta_kubernetes_endpoint_port_name'], regex: ep.port, action: 'keep' },
        { source_labels: ['__meta_kubernetes_namespace'], target_label: 'namespace' },
        { source_labels: ['__meta_kubernetes_service_name'], target_label: 'service' },
        { source_labels: ['__meta_kubernetes_pod_name'], target_label: 'pod' },
        { source_labels: ['__meta_kubernetes_service_name'], target_label: 'job' },
        { target_label: 'endpoint', replacement: ep.port },
      ],
    };
  });
}

const SliceSchema = z.object({
  metadata: z.object({ namespace: z.string(), labels: z.record(z.string(), z.string()).optional() }),
  endpoints: z
    .array(z.object({ addresses: z.array(z.string()), targetRef: z.object({ kind: z.string(), name: z.string() }).optional() }))
    .nullish(),
  ports: z.array(z.object({ name: z.string().nullish(), port: z.number() })).nullish(),
});
export type EndpointSlice = z.infer<typeof SliceSchema>;
export const parseEndpointSlice = (o: unknown): EndpointSlice => SliceSchema.parse(o);

/**
 * The target groups endpoints discovery finds in these EndpointSlices: one per address and port,
 * labelled with the slice's Service (its name and labels, given by `serviceLabels`), the
 * endpoint's port name and its pod, as Prometheus' __meta_kubernetes_* labels.
 */
export function endpointTargetGroups(
  slices: readonly EndpointSlice[],
  serviceLabels: (namespace: string, service: string) => Record<string, string> | undefined,
): { targets: string[]; labels: Record<string, string> }[] {
  return slices.flatMap((slice) => {
    const service = slice.metadata.labels?.['kubernetes.io/service-name'];
    const labels = service === undefined ? undefined : serviceLabels(slice.metadata.namespace, service);
    if (service === undefined || labels === undefined) return [];
    return (slice.endpoints ?? []).flatMap((ep) =>
      ep.addresses.flatMap((address) =>
        (slice.ports ?? []).map((port) => ({
          targets: [`${address}:${port.port}`],
          labels: {
            __meta_kubernetes_namespace: slice.metadata.namespace,
            __meta_kubernetes_service_name: service,
            ...Object.fromEntries(Object.entries(labels).map(([k, v]) => [`__meta_kubernetes_service_label_${metaLabel(k)}`, v])),
            __meta_kubernetes_endpoint_port_name: port.name ?? '',
            ...(ep.targetRef?.kind === 'Pod' ? { __meta_kubernetes_pod_name: ep.targetRef.name } : {}),
          },
        })),
      ),
    );
  });
}
