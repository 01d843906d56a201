import type { KubeConfig } from '@kubernetes/client-node';
import type { LEASE_NAMES } from '@sandbox-scale/scale-core';
import type { CertPair } from '../control-plane/pki';
import type { MetricsEndpoint, MetricsPage } from '../testing/metrics-scraper';
import type { SandboxdNode } from '../testing/sandboxd';

/**
 * What an e2e suite drives, whichever way the system runs: the apps as local processes next to a
 * control plane without a node (`local`, the default), or the chart installed by helm on a real
 * node (`installed`, `npm run e2e:installed`). The suites take the target from one place, the
 * SANDBOX_SCALE_E2E_TARGET environment variable that the jest config of each run sets.
 */

export const TARGET_ENV = 'SANDBOX_SCALE_E2E_TARGET';
export type TargetName = 'local' | 'installed';

export class UnknownTargetError extends Error {
  override readonly name = 'UnknownTargetError';
}
export const isUnknownTargetError = (e: unknown): e is UnknownTargetError => e instanceof UnknownTargetError;

export function e2eTarget(): TargetName {
  const target = process.env[TARGET_ENV] ?? 'local';
  if (target !== 'local' && target !== 'installed') throw new UnknownTargetError(`${TARGET_ENV}=${target}: expected local or installed`);
  return target;
}

/** A component that runs with leader election, named as its Lease is in LEASE_NAMES. */
export type LeaderComponent = keyof typeof LEASE_NAMES;

export interface TenantCredentials {
  kubeConfig: KubeConfig;
  /** A kubeconfig file of the ServiceAccount (mode 0600). */
  path: string;
  /** Its bearer token for kube-apiserver's own audience. */
  token: string;
}

/** Where e2b's SDKs reach sandbox-apiserver's e2b listener. */
export interface E2bEndpoint {
  /** E2B_API_URL and E2B_SANDBOX_URL. */
  url: string;
  /**
   * The address the URL's host name stands for, when that name is one only cluster DNS answers
   * (installed: the e2b Service's, which its certificate holds, at its cluster IP); an HTTPS URL
   * is served with the certificate servingCa signed.
   */
  address?: string;
}

export interface RestartOptions {
  /** Runs once the replica is down (local: the process stopped; installed: the pod deleted). */
  whileDown?: () => Promise<void>;
}

export interface SystemUnderTest {
  readonly target: TargetName;
  /** The admin's kubeconfig (file and loaded). */
  readonly kubeconfigPath: string;
  readonly kubeConfig: KubeConfig;
  /** kubectl and helm live here. */
  readonly binDir: string;
  /** The fleet token sandboxd and the apps share. */
  readonly fleetToken: string;
  /** The sandboxd node(s), reachable over HTTP from the test runner, with the simulator's fault control. */
  readonly nodes: readonly SandboxdNode[];
  /** Every sandbox-apiserver replica, reached directly rather than through kube-apiserver. Refreshed after a restart. */
  readonly apiserverUrls: readonly string[];
  /** The first of apiserverUrls. */
  readonly apiserverUrl: string;
  /** The claim fast path (installed: its Service). */
  readonly fastPathUrl: string;
  /** Each claim-controller replica's fast path, reached directly rather than through its Service. */
  fastPathUrls(): Promise<string[]>;
  /**
   * Base URL of the sandbox router (agent-sandbox's sandbox-router for microVMs), HTTPS with the
   * serving certificate (servingCa; servernameOf names what it holds), once it answers /healthz
   * (local: the first sandbox-apiserver replica's router listener; installed: the router
   * Service's cluster IP and port).
   */
  routerUrl(): Promise<string>;
  /** e2b's API of sandbox-apiserver (E2B_API_URL and E2B_SANDBOX_URL); local: plain HTTP on loopback. */
  e2bEndpoint(): Promise<E2bEndpoint>;
  /** PEM of the CA that signed the serving certificates of sandbox-apiserver and the fast path. */
  readonly servingCa: string;
  /** The cluster CA (PEM certificate and key): kube-apiserver's serving certificate and client certificates. */
  readonly clusterCa: CertPair;
  /** The client certificate kube-apiserver presents to aggregated servers (front proxy). */
  readonly frontProxyClient: CertPair;
  /** kube-apiserver's audit log (SubjectAccessReviews at level Request), if this control plane writes one. */
  readonly auditLogPath: string | undefined;
  /** The namespace of the node publishers' ServiceAccount (installed: the chart's inventoryPublisher.namespace). */
  readonly publisherNamespace: string;
  /**
   * The DNS name the serving certificate of sandbox-apiserver (apiserverUrls) or the fast path
   * (fastPathUrl) is checked against, as a TLS servername; undefined for any other URL (its host is).
   */
  servernameOf(url: string): string | undefined;
  /** Creates a namespace (an existing one is fine). */
  createNamespace(name: string): Promise<void>;
  /** A ServiceAccount of the namespace (created when missing) as a test tenant: its kubeconfig and token. */
  tenant(namespace: string, name: string): Promise<TenantCredentials>;
  /** Who holds a component's leader Lease (local: the app's name; installed: the pod's), if anyone. */
  leaderOf(component: LeaderComponent): Promise<string | undefined>;
  /** When the current holder of a component's leader Lease acquired it (the Lease's spec.acquireTime), if anyone holds it. */
  leaderSince(component: LeaderComponent): Promise<Date | undefined>;
  /**
   * Kills the leader of a component and resolves once it is gone and its replacement is on its
   * way (local: SIGKILL of the process, started again with the same flags; installed: the leader's
   * pod deleted with grace period 0, its Deployment makes a new one). Returns who was killed.
   */
  killLeader(component: LeaderComponent): Promise<string>;
  /**
   * Restarts one sandbox-apiserver replica and resolves once it serves again (local: the process
   * stopped and started; installed: the oldest pod deleted, the Service routing to the other
   * meanwhile, until its replacement is Ready and the APIService Available). As many restarts as
   * there are replicas restart each of them once.
   */
  restartApiserverReplica(opts?: RestartOptions): Promise<void>;
  /**
   * Where each controller and publisher serves /metrics (HTTPS, authorized), by app (`<app>`,
   * `<app>-<i>` for more replicas, `inventory-publisher-<node>`), with the CA its certificate is
   * checked against where the chart gives it one (claim-controller's serving certificate).
   */
  metricsEndpoints(): Promise<Map<string, MetricsEndpoint>>;
  /**
   * Scrapes an app's /metrics (a key of metricsEndpoints) as the chart's ServiceMonitor does:
   * HTTPS, a bearer token. `token` default: that of a ServiceAccount bound to the chart's
   * metrics-reader ClusterRole (metricsReaderToken); null sends none. Throws
   * NoMetricsEndpointError while the app has not said where it serves.
   */
  scrapeMetrics(app: string, opts?: { token?: string | null }): Promise<MetricsPage>;
  /** The token of a ServiceAccount bound to the chart's metrics-reader ClusterRole, made on first use, removed on stop. */
  metricsReaderToken(): Promise<string>;
  /** Base URL of each controller's and publisher's plain-HTTP probe server (/healthz, /readyz, /livez), keyed as metricsEndpoints. */
  probeUrls(): Promise<Map<string, string>>;
  /** The claim-reference keyring claim-controller and sandbox-apiserver are given (base64 keys, the signing one first). */
  claimRefKeys(): Promise<string[]>;
  /**
   * Replaces the keyring where the apps read it (local: the file, renamed over; installed: the
   * Secret, which reaches the pods' mounts within the kubelet's sync). Resolves once written, not
   * once read: sandbox_scale_claim_ref_key_info says when each replica has it.
   */
  setClaimRefKeys(keys: readonly string[]): Promise<void>;
  /** Every app's log text so far, by app (installed: by pod, previous containers included). */
  appLogs(): Promise<Map<string, string>>;
  /** Apps that exited without being asked to since the suite connected (local: processes; installed: container restarts). */
  appsThatExited(): Promise<string[]>;
  stop(): Promise<void>;
}

/** The keys of a claim-reference keyring's text, the signing one first. */
export function keyringKeys(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
}
