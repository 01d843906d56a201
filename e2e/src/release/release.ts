// `npm run release -- --registry HOST[:PORT][/PATH] --version X [--plain-http]`: builds every
// app's image with buildah from the repository's Dockerfile, pushes each to
// <registry>/sandbox-scale/<app>:<version>, packages the chart with those images pinned by digest
// and pushes it to oci://<registry>/charts, then prints each image's digest and size and the
// chart's digest: a table, then one JSON line. The installed tests release this way to a local
// registry and install what it printed; .github/workflows/release.yaml runs it on a tag.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { arch, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { toolPath, toolsDir } from '../control-plane/tools';
import { APPS, appImage, REPO_ROOT, type AppName } from '../images/images';
import { runCommand, runProcess } from '../system/run-command';

export class ReleaseError extends Error {
  override readonly name = 'ReleaseError';
}
export const isReleaseError = (e: unknown): e is ReleaseError => e instanceof ReleaseError;

/** The chart's values key of each app the chart runs (sandboxd-sim is released, not installed by the chart). */
const CHART_APP_KEYS: Partial<Record<AppName, string>> = {
  'claim-controller': 'claimController',
  'warmpool-driver': 'warmpoolDriver',
  'inventory-publisher': 'inventoryPublisher',
  'sandbox-apiserver': 'sandboxApiserver',
};

export interface ReleaseOptions {
  /** HOST[:PORT][/PATH]: images go to <registry>/sandbox-scale/<app>, the chart to oci://<registry>/charts. */
  registry: string;
  /** Semantic version of the images' tag and of the chart (version and appVersion). */
  version: string;
  /** The registry speaks plain HTTP (a local one); otherwise HTTPS with the host's trust. */
  plainHttp?: boolean;
  log?: (msg: string) => void;
  /** Where helm is (default: npm run tools' directory). */
  binDir?: string;
}

const DIGEST = /^sha256:[a-f0-9]{64}$/;

export const ReleasedImageSchema = z.object({
  app: z.enum(APPS),
  /** <registry>/sandbox-scale/<app>:<version> */
  ref: z.string(),
  digest: z.string().regex(DIGEST),
  /** What a pull transfers: the manifest's config and layers. */
  bytes: z.number().int(),
});
export type ReleasedImage = z.infer<typeof ReleasedImageSchema>;

/** What a release printed: every image's digest and size, and the chart's digest. */
export const ReleaseSchema = z.object({
  version: z.string(),
  /** The architecture the images hold (the base images carry this machine's node binary). */
  platform: z.string(),
  images: z.array(ReleasedImageSchema),
  /** ref: oci://<registry>/charts/sandbox-scale */
  chart: z.object({ ref: z.string(), version: z.string(), digest: z.string().regex(DIGEST) }),
});
export type Release = z.infer<typeof ReleaseSchema>;

const VERSION = /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/;
const REGISTRY = /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:\d{1,5})?(\/[a-z0-9._-]+)*$/;

const ManifestSchema = z.object({
  config: z.object({ size: z.number() }),
  layers: z.array(z.object({ size: z.number() })),
});

/** The bytes a pull of `image` transfers, from its manifest in the registry. */
async function pulledBytes(registry: string, app: AppName, digest: string, plainHttp: boolean): Promise<number> {
  const [host, ...path] = registry.split('/');
  const repo = [...path, 'sandbox-scale', app].join('/');
  const res = await fetch(`${plainHttp ? 'http' : 'https'}://${host}/v2/${repo}/manifests/${digest}`, {
    headers: { accept: 'application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json' },
  });
  if (!res.ok) throw new ReleaseError(`the registry has no manifest ${digest} of ${repo}: ${res.status}`);
  const m = ManifestSchema.parse(await res.json());
  return m.config.size + m.layers.reduce((n, l) => n + l.size, 0);
}

/** A copy of the chart whose defaults are this release: the registry, the version and every image's digest. */
function releasedChart(dir: string, o: ReleaseOptions, images: ReleasedImage[]): string {
  const chart = join(dir, 'sandbox-scale');
  cpSync(join(REPO_ROOT, 'charts/sandbox-scale'), chart, { recursive: true });
  const valuesPath = join(chart, 'values.yaml');
  const values = parseDocument(readFileSync(valuesPath, 'utf8'));
  values.setIn(['image', 'registry'], `${o.registry}/sandbox-scale`);
  values.setIn(['image', 'tag'], o.version);
  for (const img of images) {
    const key = CHART_APP_KEYS[img.app];
    if (key !== undefined) values.setIn([key, 'image', 'digest'], img.digest);
  }
  writeFileSync(valuesPath, values.toString());
  const chartPath = join(chart, 'Chart.yaml');
  const meta = parseDocument(readFileSync(chartPath, 'utf8'));
  meta.set('version', o.version);
  meta.set('appVersion', o.version);
  const listed = images
    .filter((i) => CHART_APP_KEYS[i.app] !== undefined)
    .map((i) => `- name: ${i.app}\n  image: ${i.ref}@${i.digest}\n`)
    .join('');
  meta.setIn(['annotations', 'artifacthub.io/images'], listed);
  writeFileSync(chartPath, meta.toString());
  return chart;
}

export async function release(o: ReleaseOptions): Promise<Release> {
  if (!VERSION.test(o.version))
    throw new ReleaseError(`--version ${JSON.stringify(o.version)} is not a semantic version (1.2.3, 1.2.3-rc.1)`);
  if (!REGISTRY.test(o.registry)) throw new ReleaseError(`--registry ${JSON.stringify(o.registry)} is not HOST[:PORT][/PATH]`);
  const log = o.log ?? ((m: string) => process.stderr.write(`[release] ${m}\n`));
  const plainHttp = o.plainHttp ?? false;
  const helm = toolPath(o.binDir ?? toolsDir(), 'helm');
  // the base images copy this machine's node binary, so they hold its architecture only
  const platform = `linux/${arch() === 'x64' ? 'amd64' : arch()}`;
  log(`building ${APPS.length} images for ${platform} only: the base images carry this machine's node binary`);
  const work = mkdtempSync(join(tmpdir(), 'sandbox-scale-release-'));
  try {
    const images: ReleasedImage[] = [];
    for (const app of APPS) {
      const built = appImage(app, work, { tag: o.version, archive: false });
      const ref = `${o.registry}/sandbox-scale/${app}:${o.version}`;
      const digestFile = join(work, `${app}.digest`);
      log(`pushing ${ref}`);
      await runCommand('buildah', [
        'push',
        '--quiet',
        `--tls-verify=${plainHttp ? 'false' : 'true'}`,
        '--digestfile',
        digestFile,
        built.name,
        `docker://${ref}`,
      ]);
      const digest = readFileSync(digestFile, 'utf8').trim();
      if (!DIGEST.test(digest)) throw new ReleaseError(`buildah push ${ref} wrote no digest (${JSON.stringify(digest)})`);
      images.push({ app, ref, digest, bytes: await pulledBytes(o.registry, app, digest, plainHttp) });
    }
    const chartDir = releasedChart(work, o, images);
    await runCommand(helm, ['package', chartDir, '--destination', work]);
    const chartRef = `oci://${o.registry}/charts`;
    log(`pushing the chart to ${chartRef}`);
    const pushed = await runProcessOutput(helm, [
      'push',
      join(work, `sandbox-scale-${o.version}.tgz`),
      chartRef,
      ...(plainHttp ? ['--plain-http'] : []),
    ]);
    const digest = /Digest:\s*(sha256:[a-f0-9]{64})/.exec(pushed)?.[1];
    if (digest === undefined) throw new ReleaseError(`helm push printed no digest:\n${pushed}`);
    return { version: o.version, platform, images, chart: { ref: `${chartRef}/sandbox-scale`, version: o.version, digest } };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** stdout and stderr of a command that must succeed (helm push prints its digest on either, by version). */
async function runProcessOutput(bin: string, args: string[]): Promise<string> {
  const r = await runProcess(bin, args);
  if (r.code !== 0) throw new ReleaseError(`${bin.split('/').pop()} ${args[0] ?? ''} failed: ${r.stderr.trim()}`);
  return `${r.stdout}\n${r.stderr}`;
}

/** The table, then the JSON line. */
export function releaseReport(r: Release): string {
  const rows = r.images.map((i) => `${i.app.padEnd(20)} ${(i.bytes / 1e6).toFixed(1).padStart(8)} MB  ${i.ref}@${i.digest}`);
  return [
    `release ${r.version} (${r.platform})`,
    `${'image'.padEnd(20)} ${'size'.padStart(11)}  reference`,
    ...rows,
    `${'chart'.padEnd(20)} ${''.padStart(11)}  ${r.chart.ref}:${r.chart.version}@${r.chart.digest}`,
    JSON.stringify(r),
  ].join('\n');
}

if (require.main === module) {
  const { values } = parseArgs({
    options: { registry: { type: 'string' }, version: { type: 'string' }, 'plain-http': { type: 'boolean', default: false } },
  });
  if (values.registry === undefined || values.version === undefined) {
    process.stderr.write('usage: npm run release -- --registry HOST[:PORT][/PATH] --version X.Y.Z [--plain-http]\n');
    process.exit(2);
  }
  release({ registry: values.registry, version: values.version, plainHttp: values['plain-http'] }).then(
    (r) => process.stdout.write(`${releaseReport(r)}\n`),
    (err: unknown) => {
      process.stderr.write(`[release] ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
