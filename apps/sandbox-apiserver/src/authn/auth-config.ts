import type { KubeConfig } from '@kubernetes/client-node';
import { kubeRequest } from '@sandbox-scale/kube-runtime';
import { z } from 'zod';

/** The delegated-authentication inputs kube-apiserver publishes (k8s-api.md §4.4). */
export interface AuthenticationConfig {
  readonly clientCa?: string;
  readonly requestHeaderCa?: string;
  readonly allowedNames: readonly string[];
  readonly usernameHeaders: readonly string[];
  readonly uidHeaders: readonly string[];
  readonly groupHeaders: readonly string[];
  readonly extraHeaderPrefixes: readonly string[];
}

const ConfigMapSchema = z.object({ data: z.record(z.string(), z.string()).optional() });
const StringListSchema = z.array(z.string());

function list(data: Record<string, string>, key: string, fallback: readonly string[]): readonly string[] {
  const raw = data[key];
  if (raw === undefined || raw.trim() === '') return fallback;
  return StringListSchema.parse(JSON.parse(raw));
}

/** Decodes the ConfigMap data; list-valued keys are JSON arrays in strings. */
export function authenticationConfigOf(data: Record<string, string>): AuthenticationConfig {
  return {
    ...(data['client-ca-file'] ? { clientCa: data['client-ca-file'] } : {}),
    ...(data['requestheader-client-ca-file'] ? { requestHeaderCa: data['requestheader-client-ca-file'] } : {}),
    allowedNames: list(data, 'requestheader-allowed-names', []),
    usernameHeaders: list(data, 'requestheader-username-headers', ['X-Remote-User']),
    uidHeaders: list(data, 'requestheader-uid-headers', []),
    groupHeaders: list(data, 'requestheader-group-headers', ['X-Remote-Group']),
    extraHeaderPrefixes: list(data, 'requestheader-extra-headers-prefix', ['X-Remote-Extra-']),
  };
}

/** Reads kube-system/extension-apiserver-authentication. */
export async function loadAuthenticationConfig(kc: KubeConfig): Promise<AuthenticationConfig> {
  const raw = await kubeRequest(kc, { method: 'GET', path: '/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication' });
  return authenticationConfigOf(ConfigMapSchema.parse(raw).data ?? {});
}
