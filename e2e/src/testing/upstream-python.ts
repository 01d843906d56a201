import { join } from 'node:path';
import { runCommand } from '../system/run-command';

/** The release of agent-sandbox's Python client the upstream suites run unchanged. */
export const UPSTREAM_PYTHON_CLIENT = 'k8s-agent-sandbox==1.0.8';

/**
 * A Python venv under `dir` with the upstream client installed from PyPI; resolves with the path
 * of its python. It takes a while: start it beside the system and await both.
 */
export async function upstreamPythonVenv(dir: string): Promise<string> {
  const venv = join(dir, 'venv');
  await runCommand('python3', ['-m', 'venv', venv]);
  await runCommand(join(venv, 'bin', 'pip'), ['install', '--quiet', '--disable-pip-version-check', UPSTREAM_PYTHON_CLIENT]);
  return join(venv, 'bin', 'python');
}
