import { readFileSync } from 'node:fs';
import type { KubeConfig } from '@kubernetes/client-node';
import { OwnerRefKey } from '@sandbox-scale/scale-core';
import { loadKubeConfig } from '../client/kube-config';

/**
 * A value an app reads once its flags parse (a file a flag names, the kubeconfig), under the flag
 * that names it, so a failure to read it is reported as that flag's problem.
 */
export interface FlagInput<C, V> {
  /** `--fleet-token-file`: prefixes the problem when `read` throws. */
  flag: string;
  read(config: C): V;
}

/** The kubeconfig of `--kubeconfig` (else $KUBECONFIG, else the in-cluster service account). */
export const kubeConfigInput: FlagInput<{ kubeconfig: string }, KubeConfig> = {
  flag: '--kubeconfig',
  read: (config) => loadKubeConfig(config.kubeconfig),
};

/** Reads every input, collecting each problem instead of stopping at the first, so one run reports them all. */
export function readInputs<C, I>(inputs: { [K in keyof I]: FlagInput<C, I[K]> } | undefined, config: C): { values: I; problems: string[] } {
  const values: Partial<I> = {};
  const problems: string[] = [];
  for (const key of Object.keys(inputs ?? {}) as Array<keyof I>) {
    const input = (inputs as { [K in keyof I]: FlagInput<C, I[K]> })[key];
    try {
      values[key] = input.read(config);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      problems.push(message.startsWith(`${input.flag}:`) ? message : `${input.flag}: ${message}`);
    }
  }
  return { values: values as I, problems };
}

/**
 * The sandboxd fleet token: the file of `--fleet-token-file` wins (a Secret mount, whitespace
 * trimmed), then env SANDBOX_SCALE_FLEET_TOKEN; '' means none, and every app that needs it fails
 * closed on ''. A file that cannot be read is an error under the flag, never a silent ''.
 */
export function readFleetToken(file: string, env: Record<string, string | undefined> = process.env): string {
  if (file !== '') {
    try {
      return readFileSync(file, 'utf8').trim();
    } catch (err) {
      throw new Error(`--fleet-token-file: cannot read ${file}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
  }
  return (env.SANDBOX_SCALE_FLEET_TOKEN ?? '').trim();
}

/** The fleet token as a start input of every app that talks to sandboxd. */
export const fleetTokenInput: FlagInput<{ fleetTokenFile: string }, string> = {
  flag: '--fleet-token-file',
  read: (config) => readFleetToken(config.fleetTokenFile),
};

/**
 * The key claim references are proven with (OwnerRefKey), shared by claim-controller and
 * sandbox-apiserver: the file of `--claim-ref-key-file` (a Secret mount) wins, then env
 * SANDBOX_SCALE_CLAIM_REF_KEY; base64 of at least 32 bytes. There is no default: without the key
 * neither app can tell its own references from a node's, so a missing or short key stops the start.
 */
export function readClaimRefKey(file: string, env: Record<string, string | undefined> = process.env): OwnerRefKey {
  let text = env.SANDBOX_SCALE_CLAIM_REF_KEY ?? '';
  if (file !== '') {
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new Error(`--claim-ref-key-file: cannot read ${file}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
  }
  if (text.trim() === '') throw new Error('--claim-ref-key-file: no claim reference key (the file, or env SANDBOX_SCALE_CLAIM_REF_KEY)');
  return OwnerRefKey.fromText(text);
}

/** The claim reference key as a start input of claim-controller and sandbox-apiserver. */
export const claimRefKeyInput: FlagInput<{ claimRefKeyFile: string }, OwnerRefKey> = {
  flag: '--claim-ref-key-file',
  read: (config) => readClaimRefKey(config.claimRefKeyFile),
};
