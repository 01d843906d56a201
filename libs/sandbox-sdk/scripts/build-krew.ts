// Builds the kubectl-sandbox plugin as Krew installs it: `tsx libs/sandbox-sdk/scripts/build-krew.ts
// [OUT] [--uri-base URL]` (default dist/krew) writes kubectl-sandbox-vX.tar.gz, one executable
// file with everything it needs bundled in (Krew installs no npm dependencies; Node.js ≥ 20 on
// PATH runs it) and the LICENSE, and sandbox.yaml, the Krew manifest naming that archive by its
// sha256. The archive is the same bytes for the same sources (sorted entries, fixed owners and
// times, gzip without a name or time), so the manifest's sha256 can be checked by anyone who
// builds it again. The release uploads the archive where --uri-base says; the manifest goes to
// krew-index.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { parse as parseYaml, stringify } from 'yaml';
import { z } from 'zod';

const LIB = resolve(__dirname, '..');
const ROOT = resolve(LIB, '../..');

const Chart = z.object({ appVersion: z.string().min(1), home: z.string().url() });

export interface KrewBuild {
  dir: string;
  archive: string;
  manifest: string;
  sha256: string;
  version: string;
}

/** The Krew manifest (krew.googlecontainertools.github.com/v1alpha2 Plugin) for one archive. */
export function krewManifest(o: { version: string; home: string; uri: string; sha256: string }): Record<string, unknown> {
  return {
    apiVersion: 'krew.googlecontainertools.github.com/v1alpha2',
    kind: 'Plugin',
    metadata: { name: 'sandbox' },
    spec: {
      version: `v${o.version}`,
      homepage: o.home,
      shortDescription: 'Claim and drive sandbox-scale microVM sandboxes',
      description: [
        'Claims warm sandboxes (pre-booted microVMs) of a sandbox-scale SandboxWarmPool, runs',
        'commands in them, copies files in and out and forwards ports, with your kubeconfig and',
        'RBAC: kubectl sandbox claim POOL --wait; kubectl sandbox exec NAME -- CMD.',
        '',
      ].join('\n'),
      caveats: 'The plugin runs on Node.js 20 or later, which must be on PATH.\n',
      platforms: ['linux', 'darwin'].flatMap((os) =>
        ['amd64', 'arm64'].map((arch) => ({
          selector: { matchLabels: { os, arch } },
          uri: o.uri,
          sha256: o.sha256,
          files: [
            { from: 'kubectl-sandbox', to: '.' },
            { from: 'LICENSE', to: '.' },
          ],
          bin: 'kubectl-sandbox',
        })),
      ),
    },
  };
}

export async function buildKrew(out = join(ROOT, 'dist/krew'), uriBase?: string): Promise<KrewBuild> {
  const chart = Chart.parse(parseYaml(readFileSync(join(ROOT, 'charts/sandbox-scale/Chart.yaml'), 'utf8')));
  const version = chart.appVersion;
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const stage = mkdtempSync(join(tmpdir(), 'kubectl-sandbox-krew-'));
  try {
    // one file: the SDK, the workspace libraries and the npm dependencies, as CommonJS
    await build({
      entryPoints: [join(LIB, 'src/cli/run-main.ts')],
      outfile: join(stage, 'kubectl-sandbox'),
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'cjs',
      minify: true,
      legalComments: 'none',
      logLevel: 'warning',
      banner: { js: '#!/usr/bin/env node' },
      define: { SANDBOX_SCALE_SDK_VERSION: JSON.stringify(version) },
    });
    chmodSync(join(stage, 'kubectl-sandbox'), 0o755);
    copyFileSync(join(ROOT, 'LICENSE'), join(stage, 'LICENSE'));
    const name = `kubectl-sandbox-v${version}.tar.gz`;
    const archive = join(out, name);
    const tar = execFileSync(
      'tar',
      [
        '--sort=name',
        '--owner=0',
        '--group=0',
        '--numeric-owner',
        '--mtime=@0',
        '--format=ustar',
        '-C',
        stage,
        '-cf',
        '-',
        'LICENSE',
        'kubectl-sandbox',
      ],
      { maxBuffer: 64 * 1024 * 1024 },
    );
    writeFileSync(archive, execFileSync('gzip', ['-9', '-n', '-c'], { input: tar, maxBuffer: 64 * 1024 * 1024 }));
    const sha256 = createHash('sha256').update(readFileSync(archive)).digest('hex');
    const base = uriBase ?? `${chart.home}/releases/download/v${version}`;
    const manifest = join(out, 'sandbox.yaml');
    writeFileSync(manifest, stringify(krewManifest({ version, home: chart.home, uri: `${base.replace(/\/$/, '')}/${name}`, sha256 })));
    return { dir: out, archive, manifest, sha256, version };
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

if (require.main === module) {
  const args = process.argv.slice(2);
  const at = args.indexOf('--uri-base');
  const uriBase = at >= 0 ? args[at + 1] : undefined;
  const positional = args.filter((_a, i) => at < 0 || (i !== at && i !== at + 1));
  buildKrew(positional[0] ? resolve(positional[0]) : undefined, uriBase).then(
    (b) => process.stdout.write(`kubectl-sandbox ${b.version} for Krew: ${b.archive} (sha256 ${b.sha256}), ${b.manifest}\n`),
    (err: unknown) => {
      process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
