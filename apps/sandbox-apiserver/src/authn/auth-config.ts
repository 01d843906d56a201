import type { KubeConfig } from '@kubernetes/client-node';
import {
  ConfigMapResource,
  createInformer,
  parseUntyped,
  type Informer,
  type Logger,
  type UntypedObject,
} from '@sandbox-scale/kube-runtime';
import { findInCauseChain, SandboxScaleError } from '@sandbox-scale/scale-core';
import { z } from 'zod';

/** The delegated-authentication inputs kube-apiserver publishes. */
export interface AuthenticationConfig {
  readonly clientCa?: string;
  readonly requestHeaderCa?: string;
  readonly allowedNames: readonly string[];
  readonly usernameHeaders: readonly string[];
  readonly uidHeaders: readonly string[];
  readonly groupHeaders: readonly string[];
  readonly extraHeaderPrefixes: readonly string[];
}

export interface ConfigMapRef {
  readonly namespace: string;
  readonly name: string;
}

export const AUTHENTICATION_CONFIGMAP: ConfigMapRef = { namespace: 'kube-system', name: 'extension-apiserver-authentication' };

/** No CA: only bearer tokens authenticate (what is left when the ConfigMap is gone). */
export const NO_AUTHENTICATION_CONFIG: AuthenticationConfig = authenticationConfigOf({});

const ConfigMapDataSchema = z.object({ data: z.record(z.string(), z.string()).optional() });
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

type AuthConfigObject = UntypedObject & { config: AuthenticationConfig };

/**
 * The authentication ConfigMap, kept current by an informer: kube-apiserver rewrites it when
 * the front-proxy or client CA rotates, and requests must be judged by the CAs of now, not
 * of process start. A ConfigMap that no longer parses keeps the last good config; one that is
 * deleted leaves no CA, so front-proxy and client-certificate logins stop (fail closed).
 */
export class AuthenticationConfigWatch {
  #current: AuthenticationConfig = NO_AUTHENTICATION_CONFIG;
  readonly #listeners = new Set<(cfg: AuthenticationConfig) => void>();
  readonly #informer: Informer<AuthConfigObject>;

  constructor(kc: KubeConfig, log: Logger, ref: ConfigMapRef = AUTHENTICATION_CONFIGMAP) {
    this.#informer = createInformer<AuthConfigObject>(kc, {
      resource: ConfigMapResource,
      namespace: ref.namespace,
      fieldSelector: `metadata.name=${ref.name}`,
      parse: (obj) => ({ ...parseUntyped(obj), config: authenticationConfigOf(ConfigMapDataSchema.parse(obj).data ?? {}) }),
      log,
    });
    const set = (cfg: AuthenticationConfig, why: string): void => {
      this.#current = cfg;
      log.info(
        {
          configMap: `${ref.namespace}/${ref.name}`,
          requestHeaderCa: cfg.requestHeaderCa !== undefined,
          clientCa: cfg.clientCa !== undefined,
          allowedNames: cfg.allowedNames,
        },
        why,
      );
      for (const l of this.#listeners) l(cfg);
    };
    this.#informer.on({
      add: (o) => set(o.config, 'authentication config loaded'),
      update: (o) => set(o.config, 'authentication config changed'),
      delete: () => set(NO_AUTHENTICATION_CONFIG, 'authentication config deleted: only bearer tokens authenticate'),
      malformed: (_ref, failure) => {
        if (failure !== null)
          log.error(
            { configMap: `${ref.namespace}/${ref.name}`, failure },
            'authentication config does not parse; the last good one stays in force',
          );
      },
    });
    this.#informer.start();
  }

  get current(): AuthenticationConfig {
    return this.#current;
  }

  /** Called with each new config; returns the unsubscribe. */
  onChange(listener: (cfg: AuthenticationConfig) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  waitForSync(signal?: AbortSignal): Promise<boolean> {
    return this.#informer.waitForSync(signal);
  }

  stop(): Promise<void> {
    return this.#informer.stop();
  }
}

/** The authentication ConfigMap could not be read before the server was to start serving. */
export class AuthenticationConfigUnavailableError extends SandboxScaleError {}

export function isAuthenticationConfigUnavailable(err: unknown): boolean {
  return findInCauseChain(err, 'AuthenticationConfigUnavailableError') !== undefined;
}

/**
 * Starts the watch and waits for its first list, so the first request is already judged by
 * the published CAs; a ConfigMap that cannot be listed in time stops the start.
 */
export async function startAuthenticationConfigWatch(
  kc: KubeConfig,
  log: Logger,
  ref: ConfigMapRef = AUTHENTICATION_CONFIGMAP,
  syncTimeoutMs = 30_000,
): Promise<AuthenticationConfigWatch> {
  const watch = new AuthenticationConfigWatch(kc, log, ref);
  if (await watch.waitForSync(AbortSignal.timeout(syncTimeoutMs))) return watch;
  await watch.stop();
  throw new AuthenticationConfigUnavailableError(`cannot list ConfigMap ${ref.namespace}/${ref.name} within ${syncTimeoutMs} ms`);
}
