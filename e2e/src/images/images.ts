import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * Container images built on this machine without a registry (docs/adr/0005-local-images.md):
 * a Node runtime base assembled with buildah from the host's node binary and its shared
 * libraries, and each app as that base plus its esbuild bundle, exported as docker archives
 * that `ctr -n k8s.io images import` loads for the kubelet.
 */

export const REPO_ROOT = resolve(__dirname, '../../..');
/** Registry prefix of every image built here; the chart's `image.registry` points at it. */
export const LOCAL_REGISTRY = 'localhost/sandbox-scale';
export const LOCAL_TAG = 'local';
export const APPS = ['claim-controller', 'warmpool-driver', 'inventory-publisher', 'sandbox-apiserver', 'sandboxd-sim'] as const;
export type AppName = (typeof APPS)[number];

export class ImageBuildError extends Error {
  override readonly name = 'ImageBuildError';
}
export const isImageBuildError = (e: unknown): e is ImageBuildError => e instanceof ImageBuildError;

function cacheDir(): string {
  const root = process.env.SANDBOX_SCALE_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'sandbox-scale');
  const dir = join(root, 'images');
  mkdirSync(dir, { recursive: true });
  return dir;
}

function run(cmd: string, args: string[], opts: { cwd?: string } = {}): string {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', cwd: opts.cwd, stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new ImageBuildError(`${cmd} ${args.join(' ')} failed: ${(e.stderr ?? e.message).trim().split('\n').slice(-10).join('\n')}`);
  }
}

/** Builds with a working container from `from`, lets `fill` add to it, commits it as `name`. */
function assemble(name: string, from: string, fill: (container: string) => void, config: string[]): void {
  const container = run('buildah', ['from', '--pull-never', from]).trim();
  try {
    fill(container);
    run('buildah', ['config', ...config, container]);
    run('buildah', ['commit', '--quiet', '--rm', container, name]);
  } catch (err) {
    try { run('buildah', ['rm', container]); } catch { /* already removed by commit */ }
    throw err;
  }
}

/** Exports `name` as a docker archive (the format `ctr images import` reads with its tag). */
function exportArchive(name: string, path: string): void {
  rmSync(path, { force: true });
  run('buildah', ['push', '--quiet', name, `docker-archive:${path}:${name}`]);
}

function sharedLibraries(bin: string): string[] {
  return run('ldd', [bin]).split('\n').map((l) => l.match(/(\/\S+)\s+\(0x/)?.[1]).filter((p): p is string => !!p);
}

/** The pod sandbox image: the pause binary from `npm run tools -- node`, nothing else. */
export function pauseImage(binDir: string): { name: string; archive: string } {
  const bin = join(binDir, 'pause');
  const digest = createHash('sha256').update(readFileSync(bin)).digest('hex').slice(0, 12);
  const name = `${LOCAL_REGISTRY}/pause:${digest}`;
  const archive = join(cacheDir(), `pause-${digest}.tar`);
  if (!existsSync(archive)) {
    assemble(name, 'scratch', (c) => run('buildah', ['copy', c, bin, '/pause']), ['--entrypoint', '["/pause"]', '--user', '65535:65535']);
    exportArchive(name, `${archive}.tmp`);
    run('mv', [`${archive}.tmp`, archive]);
  }
  return { name, archive };
}

/** A Node runtime image from this machine's node binary and the libraries it links, user 65532. */
export function nodeBaseImage(): string {
  const node = process.execPath;
  const name = `${LOCAL_REGISTRY}/node-base:${process.version.slice(1)}`;
  const present = run('buildah', ['images', '--noheading', '--format', '{{.Name}}:{{.Tag}}']).split('\n').includes(name);
  if (present) return name;
  assemble(name, 'scratch', (c) => {
    run('buildah', ['copy', c, node, '/usr/local/bin/node']);
    for (const lib of sharedLibraries(node)) run('buildah', ['copy', c, lib, lib]);
    const etc = mkdtempSync(join(tmpdir(), 'sandbox-scale-base-'));
    try {
      // a passwd entry for the numeric user, so os.userInfo() and friends do not throw
      writeFileSync(join(etc, 'passwd'), 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n');
      writeFileSync(join(etc, 'group'), 'root:x:0:\nnonroot:x:65532:\n');
      run('buildah', ['copy', c, join(etc, 'passwd'), '/etc/passwd']);
      run('buildah', ['copy', c, join(etc, 'group'), '/etc/group']);
      mkdirSync(join(etc, 'tmp'), { mode: 0o1777 });
      run('buildah', ['copy', '--chmod', '1777', c, join(etc, 'tmp'), '/tmp']);
    } finally {
      rmSync(etc, { recursive: true, force: true });
    }
  }, ['--entrypoint', '["/usr/local/bin/node"]', '--user', '65532:65532', '--workingdir', '/app', '--env', 'NODE_ENV=production']);
  return name;
}

/** The esbuild command of the apps' Dockerfiles, for the runtime this machine provides. */
function bundle(entry: string, outDir: string): void {
  const esbuild = join(REPO_ROOT, 'node_modules/.bin/esbuild');
  run(esbuild, [entry, '--bundle', '--platform=node', `--target=node${process.versions.node.split('.')[0]}`, '--format=cjs',
    '--sourcemap', '--legal-comments=external', `--outfile=${join(outDir, 'main.js')}`, '--log-level=warning'], { cwd: REPO_ROOT });
}

export interface BuiltImage {
  name: string;
  archive: string;
}

/** One app image: the base plus the app's bundle; the entrypoint runs it, a pod's args go to the app (as the Dockerfiles). */
export function appImage(app: AppName, outDir: string): BuiltImage {
  return scriptImage(app, join(REPO_ROOT, 'apps', app, 'src/main.ts'), outDir);
}

/** An image running one TypeScript/JavaScript entry file (bundled), named `<registry>/<name>:local`. */
export function scriptImage(imageName: string, entry: string, outDir: string): BuiltImage {
  const base = nodeBaseImage();
  const dist = join(outDir, `${imageName}-dist`);
  mkdirSync(dist, { recursive: true });
  bundle(entry, dist);
  const name = `${LOCAL_REGISTRY}/${imageName}:${LOCAL_TAG}`;
  assemble(name, base, (c) => run('buildah', ['copy', c, `${dist}/.`, '/app/']), ['--entrypoint', '["/usr/local/bin/node", "--enable-source-maps", "/app/main.js"]']);
  const archive = join(outDir, `${imageName}.tar`);
  exportArchive(name, archive);
  return { name, archive };
}

