import { join } from 'node:path';
import { runCommand } from '../system/run-command';

/** The release of agent-sandbox's Python client the upstream suites run unchanged. */
export const UPSTREAM_PYTHON_CLIENT = 'k8s-agent-sandbox==1.0.8';

/**
 * A Python venv under `dir` with the upstream client installed from PyPI; resolves with the path
 * of its python. It takes a while: start it beside the system and await both.
 */
export function upstreamPythonVenv(dir: string): Promise<string> {
  return pythonVenv(dir, UPSTREAM_PYTHON_CLIENT);
}

/** The release of e2b's Python SDK the e2b suite runs unchanged. */
export const E2B_PYTHON_SDK = 'e2b==2.63.0';

/** A Python venv under `dir` with `requirement` installed from PyPI; resolves with the path of its python. */
export async function pythonVenv(dir: string, requirement: string): Promise<string> {
  const venv = join(dir, 'venv');
  await runCommand('python3', ['-m', 'venv', venv]);
  await runCommand(join(venv, 'bin', 'pip'), ['install', '--quiet', '--disable-pip-version-check', requirement]);
  return join(venv, 'bin', 'python');
}
