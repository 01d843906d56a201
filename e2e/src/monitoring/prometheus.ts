import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { z } from 'zod';
import { freePort } from '../control-plane/ports';
import { ProcessGroup } from '../control-plane/process-group';
import { toolPath } from '../control-plane/tools';
import { eventually } from '../testing/eventually';

/** One scrape target: an app's /metrics over HTTPS with a bearer token, as the chart's ServiceMonitor scrapes it. */
export interface ScrapeTarget {
  /** host:port */
  address: string;
  /** The `app` target label. */
  app: string;
}

export interface PrometheusOptions {
  binDir: string;
  job: string;
  targets: ScrapeTarget[];
  /** The metrics reader's token (the chart's metrics-reader ClusterRole). */
  token: string;
  scrapeIntervalSeconds: number;
  /**
   * Scrape configurations instead of the static job (each may name `tokenFile` below as its
   * credentials_file); with `rules`, the rule files Prometheus loads and evaluates.
   */
  scrapeConfigs?: (tokenFile: string) => object[];
  rules?: string[];
}

export interface Prometheus {
  /** http://127.0.0.1:<port> */
  url: string;
  /** An instant query's vector: labels and value of each series. */
  query(expr: string): Promise<{ labels: Record<string, string>; value: number }[]>;
  /** The active targets: job, scrape URL, health and last error. */
  targets(): Promise<z.infer<typeof TargetSchema>[]>;
  /** Alerts now pending or firing, by name and state. */
  alerts(): Promise<z.infer<typeof AlertSchema>[]>;
  /** Every loaded rule of every group: its name, health and (alerting rules) `for` in seconds. */
  rules(): Promise<z.infer<typeof RuleSchema>[]>;
  stop(): Promise<void>;
}

const TargetSchema = z.object({
  labels: z.record(z.string(), z.string()),
  scrapeUrl: z.string(),
  health: z.string(),
  lastError: z.string(),
});
const TargetsReplySchema = z.object({ status: z.literal('success'), data: z.object({ activeTargets: z.array(TargetSchema) }) });
const AlertSchema = z.object({ labels: z.record(z.string(), z.string()), state: z.string(), activeAt: z.string().optional() });
const AlertsReplySchema = z.object({ status: z.literal('success'), data: z.object({ alerts: z.array(AlertSchema) }) });
const RuleSchema = z.object({ name: z.string(), health: z.string(), duration: z.number().optional() });
const RulesReplySchema = z.object({
  status: z.literal('success'),
  data: z.object({ groups: z.array(z.object({ rules: z.array(RuleSchema) })) }),
});

const QueryReplySchema = z.object({
  status: z.literal('success'),
  data: z.object({
    resultType: z.literal('vector'),
    result: z.array(z.object({ metric: z.record(z.string(), z.string()), value: z.tuple([z.number(), z.string()]) })),
  }),
});

/**
 * A real Prometheus (the binary `npm run tools -- monitoring` provides) scraping the given
 * targets. honor_labels keeps a metric's own namespace label, as the chart's ServiceMonitor does.
 * The apps' metrics certificates are made at start by the apps, so they are not verified (the
 * ServiceMonitor's insecureSkipVerify); the token goes over TLS only.
 */
export async function startPrometheus(o: PrometheusOptions): Promise<Prometheus> {
  const dir = mkdtempSync(join(tmpdir(), 'sandbox-scale-prometheus-'));
  const group = new ProcessGroup(dir);
  const port = await freePort();
  const tokenFile = join(dir, 'token');
  writeFileSync(tokenFile, o.token, { mode: 0o600 });
  const ruleFiles = (o.rules ?? []).map((text, i) => {
    const file = join(dir, `rules-${i}.yaml`);
    writeFileSync(file, text);
    return file;
  });
  const config = {
    global: {
      scrape_interval: `${o.scrapeIntervalSeconds}s`,
      scrape_timeout: `${o.scrapeIntervalSeconds}s`,
      evaluation_interval: `${o.scrapeIntervalSeconds}s`,
    },
    rule_files: ruleFiles,
    scrape_configs: o.scrapeConfigs?.(tokenFile) ?? [
      {
        job_name: o.job,
        scheme: 'https',
        honor_labels: true,
        authorization: { credentials_file: tokenFile },
        tls_config: { insecure_skip_verify: true },
        static_configs: o.targets.map((t) => ({ targets: [t.address], labels: { app: t.app } })),
      },
    ],
  };
  const configFile = join(dir, 'prometheus.yml');
  writeFileSync(configFile, JSON.stringify(config));
  let exited: string | undefined;
  group.start(
    'prometheus',
    toolPath(o.binDir, 'prometheus'),
    [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    (code, logPath) => (exited = `prometheus exited with code ${code}; its log: ${logPath}`),
  );
  const url = `http://127.0.0.1:${port}`;
  const query = async (expr: string): Promise<{ labels: Record<string, string>; value: number }[]> => {
    const r = await request(`${url}/api/v1/query?${new URLSearchParams({ query: expr })}`);
    const body = QueryReplySchema.parse(await r.body.json());
    return body.data.result.map((s) => ({ labels: s.metric, value: Number(s.value[1]) }));
  };
  try {
    await eventually(
      async () => {
        if (exited) throw new Error(exited);
        const r = await request(`${url}/-/ready`);
        await r.body.text();
        if (r.statusCode !== 200) throw new Error(`prometheus not ready: ${r.statusCode}`);
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );
  } catch (err) {
    await group.stop();
    throw err;
  }
  const targets = async (): Promise<z.infer<typeof TargetSchema>[]> => {
    const r = await request(`${url}/api/v1/targets?state=active`);
    return TargetsReplySchema.parse(await r.body.json()).data.activeTargets;
  };
  const alerts = async (): Promise<z.infer<typeof AlertSchema>[]> => {
    const r = await request(`${url}/api/v1/alerts`);
    return AlertsReplySchema.parse(await r.body.json()).data.alerts;
  };
  const rules = async (): Promise<z.infer<typeof RuleSchema>[]> => {
    const r = await request(`${url}/api/v1/rules`);
    return RulesReplySchema.parse(await r.body.json()).data.groups.flatMap((g) => g.rules);
  };
  return { url, query, targets, alerts, rules, stop: () => group.stop() };
}
