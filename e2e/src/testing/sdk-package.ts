import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../system/app-process';
import { runCommand } from '../system/run-command';

export interface BuiltSdkPackage {
  /** The package's directory, as `npm pack` packs it. */
  dir: string;
  /** Its kubectl-sandbox, the file kubectl runs from PATH. */
  bin: string;
  /** Its bin directory: kubectl-sandbox and kubectl_complete-sandbox, as npm links them onto PATH. */
  binDir: string;
}

/** Where `npm start` builds the package, so the README's PATH line finds the plugin. */
export const LOCAL_SDK_PACKAGE_DIR = join(REPO_ROOT, 'dist/sandbox-sdk');

/**
 * Builds the published @sandbox-scale/sdk into dir, as `npx nx run sandbox-sdk:package` builds
 * it (in a process of its own: the build script runs under tsx, as the target does).
 */
export async function buildSdkPackage(dir: string): Promise<BuiltSdkPackage> {
  await runCommand(join(REPO_ROOT, 'node_modules/.bin/tsx'), [join(REPO_ROOT, 'libs/sandbox-sdk/scripts/build-package.ts'), dir]);
  return { dir, bin: join(dir, 'bin/kubectl-sandbox'), binDir: join(dir, 'bin') };
}

let built: Promise<BuiltSdkPackage> | undefined;

/**
 * The package, built once per test process into a directory of its own: the suites drive the
 * plugin users install, never the sources. It is under the repository's dist/, so its
 * dependencies resolve from the workspace's node_modules, at the versions the package pins (the
 * tarball installed into an empty project is the sdk-package suite's).
 */
export function builtSdkPackage(): Promise<BuiltSdkPackage> {
  built ??= (() => {
    const parent = join(REPO_ROOT, 'dist/test-packages');
    mkdirSync(parent, { recursive: true });
    const dir = mkdtempSync(join(parent, 'sandbox-sdk-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    return buildSdkPackage(join(dir, 'sdk'));
  })();
  return built;
}
