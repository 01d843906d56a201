import { endpointTargetGroups, scrapeConfigsOfServiceMonitor, ServiceMonitorSchema } from './service-monitor';

describe('scrapeConfigsOfServiceMonitor', () => {
  const monitor = ServiceMonitorSchema.parse({
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'ServiceMonitor',
    metadata: { name: 'rel-claim-controller', namespace: 'sys' },
    spec: {
      selector: { matchLabels: { 'app.kubernetes.io/component': 'claim-controller', 'sandbox-scale.x-k8s.io/metrics': 'true' } },
      namespaceSelector: { matchNames: ['sys'] },
      endpoints: [
        {
          port: 'metrics',
          path: '/metrics',
          interval: '30s',
          honorLabels: true,
          scheme: 'https',
          bearerTokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token',
          tlsConfig: { serverName: 'rel-claim-controller.sys.svc', ca: { secret: { name: 'rel-serving', key: 'ca.crt' } } },
        },
      ],
    },
  });

  it("keeps the Service's labels and port, and scrapes as the endpoint says", () => {
    const [config, ...rest] = scrapeConfigsOfServiceMonitor(monitor, {
      targetsFile: '/targets.json',
      tokenFile: '/token',
      caFile: (ns, name, key) => `/ca/${ns}/${name}/${key}`,
    });
    expect(rest).toEqual([]);
    expect(config).toMatchObject({
      job_name: 'serviceMonitor/sys/rel-claim-controller/0',
      honor_labels: true,
      scheme: 'https',
      scrape_interval: '30s',
      authorization: { credentials_file: '/token' },
      tls_config: { server_name: 'rel-claim-controller.sys.svc', ca_file: '/ca/sys/rel-serving/ca.crt' },
      file_sd_configs: [{ files: ['/targets.json'], refresh_interval: '5s' }],
    });
    const relabel = (config as { relabel_configs: { source_labels?: string[]; regex?: string; action?: string; target_label?: string }[] })
      .relabel_configs;
    expect(relabel.filter((r) => r.action === 'keep')).toEqual([
      { source_labels: ['__meta_kubernetes_namespace'], regex: 'sys', action: 'keep' },
      { source_labels: ['__meta_kubernetes_service_label_app_kubernetes_io_component'], regex: 'claim-controller', action: 'keep' },
      { source_labels: ['__meta_kubernetes_service_label_sandbox_scale_x_k8s_io_metrics'], regex: 'true', action: 'keep' },
      { source_labels: ['__meta_kubernetes_endpoint_port_name'], regex: 'metrics', action: 'keep' },
    ]);
    expect(relabel).toContainEqual({ source_labels: ['__meta_kubernetes_service_name'], target_label: 'job' });
  });

  it('takes a faster interval when asked, and skips verification only where the monitor does', () => {
    const insecure = ServiceMonitorSchema.parse({
      ...monitor,
      spec: { ...monitor.spec, endpoints: [{ port: 'metrics', scheme: 'https', tlsConfig: { insecureSkipVerify: true } }] },
    });
    const [config] = scrapeConfigsOfServiceMonitor(insecure, {
      targetsFile: '/targets.json',
      tokenFile: '/t',
      caFile: () => '',
      interval: '2s',
    });
    expect(config).toMatchObject({ scrape_interval: '2s', tls_config: { insecure_skip_verify: true } });
    expect(config).not.toHaveProperty('authorization');
  });

  it("labels each EndpointSlice address as endpoints discovery does, with its Service's labels", () => {
    const groups = endpointTargetGroups(
      [
        {
          metadata: { namespace: 'sys', labels: { 'kubernetes.io/service-name': 'rel-claim-controller-metrics' } },
          endpoints: [{ addresses: ['10.0.0.5'], targetRef: { kind: 'Pod', name: 'cc-0' } }],
          ports: [{ name: 'metrics', port: 8080 }],
        },
        { metadata: { namespace: 'sys', labels: { 'kubernetes.io/service-name': 'unknown' } }, endpoints: [], ports: [] },
      ],
      (ns, svc) => (svc === 'rel-claim-controller-metrics' ? { 'app.kubernetes.io/component': 'claim-controller' } : undefined),
    );
    expect(groups).toEqual([
      {
        targets: ['10.0.0.5:8080'],
        labels: {
          __meta_kubernetes_namespace: 'sys',
          __meta_kubernetes_service_name: 'rel-claim-controller-metrics',
          __meta_kubernetes_service_label_app_kubernetes_io_component: 'claim-controller',
          __meta_kubernetes_endpoint_port_name: 'metrics',
          __meta_kubernetes_pod_name: 'cc-0',
        },
      },
    ]);
  });
});
