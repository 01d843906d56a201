import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * Container images built on this machine without a registry (docs/adr/0005-local-images.md):
 * a Node runtime base and a Node build image assembled with buildah from the host's node binary,
 * npm and the shared libraries they link; each app built by `buildah bud` from the repository's
 * one Dockerfile on those two images, exported as a docker archive that
 * `ctr -n k8s.io images import` loads for the kubelet.
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
    try {
      run('buildah', ['rm', container]);
    } catch {
      /* already removed by commit */
    }
    throw err;
  }
}

/** Exports `name` as a docker archive (the format `ctr images import` reads with its tag). */
function exportArchive(name: string, path: string): void {
  rmSync(path, { force: true });
  run('buildah', ['push', '--quiet', name, `docker-archive:${path}:${name}`]);
}

function sharedLibraries(bin: string): string[] {
  return run('ldd', [bin])
    .split('\n')
    .map((l) => l.match(/(\/\S+)\s+\(0x/)?.[1])
    .filter((p): p is string => !!p);
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

/** Where node sits in the runtime image: where distroless puts it, so the Dockerfile's ENTRYPOINT holds on both. */
const NODE_PATH = '/nodejs/bin/node';

function imagePresent(name: string): boolean {
  return run('buildah', ['images', '--noheading', '--format', '{{.Name}}:{{.Tag}}']).split('\n').includes(name);
}

/** Copies a host binary and the shared libraries it links into a working container. */
function copyBinary(container: string, bin: string, to: string): void {
  run('buildah', ['copy', container, bin, to]);
  for (const lib of sharedLibraries(bin)) run('buildah', ['copy', container, lib, lib]);
}

/** The Dockerfile's runtime stage here: this machine's node binary and the libraries it links, user 65532 (as distroless nonroot). */
export function nodeRuntimeImage(): string {
  const name = `${LOCAL_REGISTRY}/node-runtime:${process.version.slice(1)}`;
  if (imagePresent(name)) return name;
  assemble(
    name,
    'scratch',
    (c) => {
      copyBinary(c, process.execPath, NODE_PATH);
      const etc = mkdtempSync(join(tmpdir(), 'sandbox-scale-base-'));
      try {
        // a passwd entry for the numeric user, so os.userInfo() and friends do not throw
        writeFileSync(
          join(etc, 'passwd'),
          'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n',
        );
        writeFileSync(join(etc, 'group'), 'root:x:0:\nnonroot:x:65532:\n');
        run('buildah', ['copy', c, join(etc, 'passwd'), '/etc/passwd']);
        run('buildah', ['copy', c, join(etc, 'group'), '/etc/group']);
        mkdirSync(join(etc, 'tmp'), { mode: 0o1777 });
        run('buildah', ['copy', '--chmod', '1777', c, join(etc, 'tmp'), '/tmp']);
      } finally {
        rmSync(etc, { recursive: true, force: true });
      }
    },
    ['--entrypoint', `["${NODE_PATH}"]`, '--user', '65532:65532', '--workingdir', '/app', '--env', 'NODE_ENV=production'],
  );
  return name;
}

/**
 * The guest commands a simulated sandbox runs in the installed suite: a shell, bash (e2b's SDKs run
 * every command as `/bin/bash -l -c`, as e2b's templates ship it), a few coreutils and Debian's python3.
 */
const GUEST_BINARIES = [
  ...['echo', 'cat', 'ls', 'sleep', 'env', 'nohup', 'mkdir', 'rm', 'cp', 'mv', 'touch', 'true', 'false', 'printf', 'test'],
  ...['head', 'tail', 'wc', 'grep', 'sed', 'tr', 'cut', 'sort', 'uniq', 'kill', 'id', 'stat', 'tar'],
];
const GUEST_PYTHON = '/usr/bin/python3.11';
const GUEST_BASH = '/bin/bash';

/**
 * The simulator's runtime image: the node runtime plus what its sandboxes' commands need. The
 * simulator runs exec as real processes of its own container, so a sandbox can only run what
 * this image holds; a real microVM runs what its template image holds.
 */
export function simRuntimeImage(): string {
  const runtime = nodeRuntimeImage();
  // the tag names what the image holds, so a change of the list builds a new one
  const contents = createHash('sha256')
    .update(JSON.stringify([GUEST_BINARIES, GUEST_PYTHON, GUEST_BASH]))
    .digest('hex')
    .slice(0, 8);
  const name = `${LOCAL_REGISTRY}/sim-runtime:${process.version.slice(1)}-${contents}`;
  if (imagePresent(name)) return name;
  const shell = existsSync('/bin/dash') ? '/bin/dash' : '/bin/sh';
  assemble(
    name,
    runtime,
    (c) => {
      copyBinary(c, shell, '/bin/sh');
      if (existsSync(GUEST_BASH)) copyBinary(c, GUEST_BASH, '/bin/bash');
      for (const cmd of GUEST_BINARIES) {
        const bin = ['/usr/bin', '/bin'].map((d) => join(d, cmd)).find((p) => existsSync(p));
        if (bin !== undefined) copyBinary(c, bin, `/usr/bin/${cmd}`);
      }
      if (existsSync(GUEST_PYTHON)) {
        copyBinary(c, GUEST_PYTHON, '/usr/bin/python3');
        run('buildah', ['copy', c, '/usr/lib/python3.11', '/usr/lib/python3.11']);
      }
    },
    ['--env', 'PATH=/usr/bin:/bin'],
  );
  return name;
}

/** The host's npm: `<prefix>/lib/node_modules/npm` beside the node binary's prefix. */
function hostNpmDir(): string {
  const dir = resolve(process.execPath, '../../lib/node_modules/npm');
  if (!existsSync(join(dir, 'bin/npm-cli.js'))) throw new ImageBuildError(`no npm at ${dir}: the build image copies the host's npm`);
  return dir;
}

/**
 * The Dockerfile's build stage here: the runtime image plus the host's npm, a POSIX shell and
 * `env` (the Dockerfile's RUN lines and npm's bin shims), and the host's CA bundle (npm ci
 * reaches the registry through whatever TLS the host trusts). Runs as root, as node:22-slim.
 */
export function nodeBuildImage(): string {
  const runtime = nodeRuntimeImage();
  const name = `${LOCAL_REGISTRY}/node-build:${process.version.slice(1)}`;
  if (imagePresent(name)) return name;
  const npm = hostNpmDir();
  const shell = existsSync('/bin/dash') ? '/bin/dash' : '/bin/sh';
  const caBundle = '/etc/ssl/certs/ca-certificates.crt';
  assemble(
    name,
    runtime,
    (c) => {
      copyBinary(c, shell, '/bin/sh');
      copyBinary(c, '/usr/bin/env', '/usr/bin/env');
      run('buildah', ['copy', c, npm, '/usr/local/lib/node_modules/npm']);
      const bin = mkdtempSync(join(tmpdir(), 'sandbox-scale-build-'));
      try {
        for (const cmd of ['npm', 'npx']) {
          writeFileSync(join(bin, cmd), `#!/bin/sh\nexec ${NODE_PATH} /usr/local/lib/node_modules/npm/bin/${cmd}-cli.js "$@"\n`, {
            mode: 0o755,
          });
          run('buildah', ['copy', '--chmod', '755', c, join(bin, cmd), `/usr/local/bin/${cmd}`]);
        }
      } finally {
        rmSync(bin, { recursive: true, force: true });
      }
      if (existsSync(caBundle)) run('buildah', ['copy', c, caBundle, caBundle]);
    },
    [
      '--user',
      '0:0',
      '--workingdir',
      '/',
      '--env',
      `PATH=${NODE_PATH.replace(/\/node$/, '')}:/usr/local/bin:/usr/bin:/bin`,
      ...(existsSync(caBundle) ? ['--env', `NODE_EXTRA_CA_CERTS=${caBundle}`] : []),
    ],
  );
  return name;
}

/** The esbuild flags of the Dockerfile, for an entry file that is not an app (a test fixture), on the runtime this machine provides. */
function bundle(entry: string, outDir: string): void {
  const esbuild = join(REPO_ROOT, 'node_modules/.bin/esbuild');
  run(
    esbuild,
    [
      entry,
      '--bundle',
      '--platform=node',
      `--target=node${process.versions.node.split('.')[0]}`,
      '--format=cjs',
      // the is… predicates compare class names, which renaming a colliding class would change
      '--keep-names',
      '--sourcemap',
      '--legal-comments=external',
      `--outfile=${join(outDir, 'main.js')}`,
      '--log-level=warning',
    ],
    { cwd: REPO_ROOT },
  );
}

export interface BuiltImage {
  name: string;
  archive: string;
}

export interface AppImageOptions {
  /** Tag of the image (default `local`). */
  tag?: string;
  /** Also export it as a docker archive for `ctr images import` (default true); a release pushes instead. */
  archive?: boolean;
}

/** The version an image is stamped with: the repository's own (package.json). */
export function repoVersion(): string {
  return (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}

/** The commit an image is built from, `-dirty` when the work tree differs from it; "unknown" outside git. */
function repoRevision(): string {
  try {
    const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: REPO_ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: REPO_ROOT, encoding: 'utf8' }).trim();
    return dirty === '' ? head : `${head}-dirty`;
  } catch {
    return 'unknown';
  }
}

/**
 * One app image: `buildah bud` of the repository's Dockerfile with `--build-arg APP=<app>`, on the
 * local build and runtime images. `--layers` keeps each step's layer, so a source edit reuses
 * the `npm ci` layer and only the bundle step runs again.
 */
export function appImage(app: AppName, outDir: string, opts: AppImageOptions = {}): BuiltImage {
  const name = `${LOCAL_REGISTRY}/${app}:${opts.tag ?? LOCAL_TAG}`;
  run('buildah', [
    'bud',
    '--layers',
    '--pull=never',
    '--quiet',
    '--build-arg',
    `APP=${app}`,
    '--build-arg',
    `BUILD_IMAGE=${nodeBuildImage()}`,
    '--build-arg',
    `RUNTIME_IMAGE=${app === 'sandboxd-sim' ? simRuntimeImage() : nodeRuntimeImage()}`,
    '--build-arg',
    `NODE_MAJOR=${process.versions.node.split('.')[0]}`,
    '--build-arg',
    `SANDBOX_SCALE_VERSION=${repoVersion()}`,
    '--build-arg',
    `SANDBOX_SCALE_REVISION=${repoRevision()}`,
    '-f',
    join(REPO_ROOT, 'Dockerfile'),
    '-t',
    name,
    REPO_ROOT,
  ]);
  if (opts.archive === false) return { name, archive: '' };
  const archive = join(outDir, `${app}.tar`);
  exportArchive(name, archive);
  return { name, archive };
}

/** An image running one TypeScript/JavaScript entry file (bundled) on the runtime image, named `<registry>/<name>:local`. */
export function scriptImage(imageName: string, entry: string, outDir: string): BuiltImage {
  const base = nodeRuntimeImage();
  const dist = join(outDir, `${imageName}-dist`);
  mkdirSync(dist, { recursive: true });
  bundle(entry, dist);
  const name = `${LOCAL_REGISTRY}/${imageName}:${LOCAL_TAG}`;
  assemble(name, base, (c) => run('buildah', ['copy', c, `${dist}/.`, '/app/']), [
    '--entrypoint',
    `["${NODE_PATH}", "--enable-source-maps", "/app/main.js"]`,
  ]);
  const archive = join(outDir, `${imageName}.tar`);
  exportArchive(name, archive);
  return { name, archive };
}
