import { hostname } from 'node:os';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Registry } from 'prom-client';
import { SandboxScaleError } from '@sandbox-scale/scale-core';
import { DelegatedAuth } from './auth/delegated-auth';
import { type BindAddress, parseBindAddress } from './health/bind-address';
import type { Check } from './health/checks';
import { type ListenerRole, type MetricsAuthenticator, ProbeServer } from './health/probe-server';
import { fixedPair, watchServingFiles, type ServingPair } from './certs/watched-files';
import { selfSignedCert } from './http/self-signed-cert';
import { type LeaderElectionTimings, type LeaderElector, type LeaderElectorOptions, createLeaderElector } from './leader/leader-elector';
import type { Logger } from './log/logger';
import { LeaderElectionLostError, RunnableFailedError, ShutdownTimeoutError } from './manager-errors';
import { leaderGauge } from './metrics/leader-gauge';
import type { Runnable } from './runnable';

/** What the manager needs of an informer (Informer<T> fits). */
export interface Cache {
  readonly name: string;
  start(): void;
  stop(): Promise<void>;
  hasSynced(): boolean;
  waitForSync(signal?: AbortSignal): Promise<boolean>;
}

export interface LeaderElectionConfig extends LeaderElectionTimings {
  namespace: string;
  /** Lease name, one per component. */
  name: string;
  identity?: string;
}

export type MetricsAuthMode = 'delegated' | 'none';

export interface ManagerOptions {
  log: Logger;
  registry: Registry;
  /** Needed for leader election unless electorFactory is given. */
  kubeConfig?: KubeConfig;
  /** Undefined: no election, leader-only runnables start at once. */
  leaderElection?: LeaderElectionConfig;
  electorFactory?: (opts: LeaderElectorOptions) => LeaderElector;
  /**
   * `:8080` style or `0` (off). Equal addresses with a fixed port share one listener (the
   * metrics one, which answers the probes too); port 0 gives each listener a port of its own.
   */
  metricsBindAddress?: string;
  /** Plain HTTP, /healthz, /readyz and /livez only: the kubelet probes it without a token. */
  healthProbeBindAddress?: string;
  /**
   * How /metrics is guarded (`--metrics-auth`). `delegated` (the default): the metrics address
   * is served over HTTPS and a scrape needs a bearer token the API server authenticates
   * (TokenReview) and allows get on the non-resource URL /metrics (SubjectAccessReview).
   * `none`: plain HTTP, open to whoever reaches the port (local runs, benches).
   */
  metricsAuth?: MetricsAuthMode;
  /** Serving certificate of the metrics address (PEM files, both or neither); neither: a self-signed one made at start. */
  metricsTlsCertFile?: string;
  metricsTlsPrivateKeyFile?: string;
  /** The delegated guard; default a DelegatedAuth on kubeConfig (tests pass a fake). */
  metricsAuthenticator?: MetricsAuthenticator;
  /** Default 30 s. */
  gracefulShutdownTimeoutMs?: number;
}

/**
 * controller-runtime's manager, small: caches start first and must sync, then runnables that
 * need no leader, then leader-only ones once the Lease is won. Stopping reverses it within a
 * timeout: runnables stop; once the leader-only ones have stopped and drained, the Lease is
 * released (a successor never overlaps with leader work still running here, and does not wait for
 * the rest of the drain: a pod killed with a short grace period hands over at once instead of
 * after a lease duration); then the other runnables drain, caches stop and listeners close.
 */
export class Manager {
  /** Ports actually bound once started (`:0` picks a free one). */
  readonly boundPorts: number[] = [];
  private readonly caches: Cache[] = [];
  private readonly runnables: Runnable[] = [];
  private readonly servers: ProbeServer[] = [];
  private readonly running: Array<Promise<void>> = [];
  /** The leader-only runnables' runs, a subset of `running`. */
  private readonly leaderRunning: Array<Promise<void>> = [];
  /** Stops leader-only runnables alone (stepDown), before the others. */
  private readonly leaderStop = new AbortController();
  private steppedDown: Promise<void> | undefined;
  private readonly probes: ProbeServer;
  private readonly fatal = new AbortController();
  private readonly runStop = new AbortController();
  private readonly electorStop = new AbortController();
  private fatalError: unknown;
  private elector: LeaderElector | undefined;
  private electorDone: Promise<void> = Promise.resolve();

  constructor(private readonly opts: ManagerOptions) {
    if (opts.leaderElection && !opts.kubeConfig && !opts.electorFactory) {
      throw new SandboxScaleError('leader election needs a kubeConfig');
    }
    const metricsOn = parseBindAddress(opts.metricsBindAddress ?? '0') !== undefined;
    if (metricsOn && (opts.metricsAuth ?? 'delegated') === 'delegated' && !opts.kubeConfig && !opts.metricsAuthenticator) {
      throw new SandboxScaleError('delegated metrics auth needs a kubeConfig (or --metrics-auth=none)');
    }
    if (Boolean(opts.metricsTlsCertFile) !== Boolean(opts.metricsTlsPrivateKeyFile)) {
      throw new SandboxScaleError('--metrics-tls-cert-file and --metrics-tls-private-key-file go together');
    }
    // the probe listener: no registry, so the open port never serves metrics
    this.probes = new ProbeServer({ log: opts.log });
    this.probes.addHealthzCheck('ping', () => true);
  }

  /** Adds a cache; it starts first and /readyz fails, naming it, until it has synced. */
  addInformer(cache: Cache): this {
    this.caches.push(cache);
    this.probes.addReadyzCheck(`informer:${cache.name}`, () => {
      if (!cache.hasSynced()) throw new Error('not synced');
    });
    return this;
  }

  add(r: Runnable): this {
    this.runnables.push(r);
    return this;
  }

  addHealthzCheck(name: string, check: Check): this {
    this.probes.addHealthzCheck(name, check);
    return this;
  }

  addReadyzCheck(name: string, check: Check): this {
    this.probes.addReadyzCheck(name, check);
    return this;
  }

  isLeader(): boolean {
    return this.opts.leaderElection ? (this.elector?.isLeader() ?? false) : true;
  }

  /** Runs until signal aborts or something fails; resolves after a clean stop, else rejects with why. */
  async start(signal: AbortSignal): Promise<void> {
    const stop = AbortSignal.any([signal, this.fatal.signal]);
    try {
      await this.listen();
      for (const c of this.caches) c.start();
      const synced = await Promise.all(this.caches.map((c) => c.waitForSync(stop)));
      if (synced.every(Boolean)) {
        this.opts.log.info({ caches: this.caches.map((c) => c.name) }, 'caches synced');
        for (const r of this.runnables) if (r.needLeaderElection === false) this.run(r, this.runStop.signal);
        this.campaign();
        if (!stop.aborted) await new Promise<void>((resolve) => stop.addEventListener('abort', () => resolve(), { once: true }));
      }
    } catch (err) {
      this.fail(err);
    }
    await this.shutdown();
    if (this.fatalError !== undefined) throw this.fatalError;
  }

  private async listen(): Promise<void> {
    const metricsAddr = this.opts.metricsBindAddress ?? '0';
    const probeAddr = this.opts.healthProbeBindAddress ?? '0';
    const metrics = parseBindAddress(metricsAddr);
    const probes = parseBindAddress(probeAddr);
    // one port cannot be bound twice: a fixed address named for both is one listener, the metrics one
    const shared = metrics !== undefined && metricsAddr === probeAddr && metrics.port !== 0;
    if (probes && !shared) await this.bind(this.probes, probes);
    if (metrics) await this.bind(this.probes.sibling(await this.metricsRole()), metrics);
  }

  private async bind(server: ProbeServer, addr: BindAddress): Promise<void> {
    this.servers.push(server);
    this.boundPorts.push((await server.listen(addr)).port);
  }

  /**
   * The metrics listener's registry, guard and certificate. With delegated auth a scraper sends
   * a bearer token, so the listener is HTTPS: the chart's serving certificate where the app has
   * one, else a self-signed one made now (a scraper then skips verification, having no CA to
   * check it with; the token is still never on the wire in the clear).
   */
  private async metricsRole(): Promise<ListenerRole> {
    if ((this.opts.metricsAuth ?? 'delegated') === 'none') return { registry: this.opts.registry };
    const metricsAuth =
      this.opts.metricsAuthenticator ??
      // system:masters as kube's delegating authorizer: the cluster admin is never refused a scrape
      new DelegatedAuth(this.opts.kubeConfig as KubeConfig, { alwaysAllowGroups: ['system:masters'] });
    return { registry: this.opts.registry, metricsAuth, tls: await this.metricsCert() };
  }

  private async metricsCert(): Promise<ServingPair> {
    const { metricsTlsCertFile: certFile, metricsTlsPrivateKeyFile: keyFile } = this.opts;
    // files (a mounted Secret) are read again when renewed; the app's own certificate never changes
    if (certFile && keyFile) return watchServingFiles(certFile, keyFile, this.opts.log);
    const host = hostname();
    const made = await selfSignedCert({ commonName: host, dnsNames: [host, 'localhost'], ips: ['127.0.0.1'] });
    return fixedPair(made.cert, made.key);
  }

  private campaign(): void {
    const leaderOnly = this.runnables.filter((r) => r.needLeaderElection !== false);
    const le = this.opts.leaderElection;
    const leaderSignal = AbortSignal.any([this.runStop.signal, this.leaderStop.signal]);
    if (!le) {
      for (const r of leaderOnly) this.leaderRunning.push(this.run(r, leaderSignal));
      return;
    }
    // a standby exports 0 from the start, so a scrape of every replica shows exactly one 1 per Lease
    const leader = leaderGauge(this.opts.registry, le.name);
    leader.set(false);
    const electorOpts: LeaderElectorOptions = {
      ...le,
      log: this.opts.log,
      onStartedLeading: (leadership) => {
        leader.set(true);
        leadership.addEventListener('abort', () => leader.set(false), { once: true });
        // won while a stepDown began (the campaign's last try raced it): start nothing, the
        // elector is being stopped and releases the Lease
        if (this.leaderStop.signal.aborted) return;
        for (const r of leaderOnly) this.leaderRunning.push(this.run(r, AbortSignal.any([leaderSignal, leadership])));
      },
    };
    const elector = this.opts.electorFactory?.(electorOpts) ?? createLeaderElector(this.opts.kubeConfig as KubeConfig, electorOpts);
    this.elector = elector;
    this.electorDone = elector.run(this.electorStop.signal).then((outcome) => {
      if (outcome === 'lost') this.fail(new LeaderElectionLostError(`lost the Lease ${le.namespace}/${le.name}`));
    });
  }

  private run(r: Runnable, signal: AbortSignal): Promise<void> {
    this.opts.log.info({ runnable: r.name }, 'starting runnable');
    const run = r.start(signal).catch((err: unknown) => {
      if (!this.runStop.signal.aborted && !this.leaderStop.signal.aborted) this.fail(new RunnableFailedError(r.name, err));
    });
    this.running.push(run);
    return run;
  }

  /**
   * Stops the leader-only runnables, waits for them and their drains, then releases the Lease;
   * the runnables that need no leader keep running. A stop calls it first; an app that has other
   * things to close before its manager stops (a server whose last requests feed a queue) calls it
   * beside them, so a standby takes over while they close. Idempotent.
   */
  stepDown(): Promise<void> {
    this.steppedDown ??= (async () => {
      this.leaderStop.abort();
      await Promise.all(this.leaderRunning);
      const leaderOnly = this.runnables.filter((r) => r.needLeaderElection !== false);
      await Promise.all(leaderOnly.map((r) => r.drain?.()));
      this.electorStop.abort();
      await this.electorDone;
    })();
    return this.steppedDown;
  }

  private fail(err: unknown): void {
    if (this.fatalError !== undefined) return;
    this.fatalError = err;
    this.opts.log.error({ err }, 'stopping after a fatal error');
    this.fatal.abort();
  }

  private async shutdown(): Promise<void> {
    const timeoutMs = this.opts.gracefulShutdownTimeoutMs ?? 30_000;
    this.opts.log.info({ timeoutMs }, 'shutting down');
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
    });
    const outcome = await Promise.race([this.stopAll(), timedOut]);
    clearTimeout(timer);
    if (outcome === 'timeout') {
      const err = new ShutdownTimeoutError(`shutdown did not finish within ${timeoutMs} ms`);
      this.opts.log.error({ err }, 'shutdown timed out');
      this.fatalError ??= err;
      await Promise.all(this.servers.map((s) => s.close()));
    } else {
      this.opts.log.info('shut down cleanly');
    }
  }

  private async stopAll(): Promise<'done'> {
    this.runStop.abort();
    await this.stepDown();
    await Promise.all(this.running);
    await Promise.all(this.runnables.filter((r) => r.needLeaderElection === false).map((r) => r.drain?.()));
    await Promise.all(this.caches.map((c) => c.stop()));
    await Promise.all(this.servers.map((s) => s.close()));
    return 'done';
  }
}
