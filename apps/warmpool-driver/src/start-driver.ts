import type { KubeConfig } from '@kubernetes/client-node';
import {
  CertificateKeeper,
  Manager,
  controller,
  createEventRecorder,
  createInformer,
  defaultIdentity,
  generationChanged,
  type InformerOptions,
  type KeeperTimes,
  type KeptObjects,
  type KubeObject,
  type Logger,
  type ManagerOptions,
} from '@sandbox-scale/kube-runtime';
import {
  FIELD_MANAGERS,
  NodeInventorySchema,
  SandboxTemplateSchema,
  parseObject,
  type NodeInventory,
  type SandboxTemplate,
  type SandboxWarmPool,
} from '@sandbox-scale/scale-core';
import { fleetClients, KnownNodeAddresses, type NodeTokenMode } from '@sandbox-scale/sandboxd-client';
import type { Registry } from 'prom-client';
import { SYNC_REQUEST, WarmPoolReconciler } from './controllers/warmpool-reconciler';
import { poolMetrics } from './controllers/pool-metrics';
import { parseWarmPool } from './parse-pool';
import { NodeInventoryResource, SandboxTemplateResource, SandboxWarmPoolResource } from './resources';
import { TargetPusher } from './targets/push-targets';
import type { ReplicaLimits } from './targets/replica-limits';

export interface StartDriverOptions {
  kubeConfig: KubeConfig;
  log: Logger;
  registry: Registry;
  /** '' refuses every write to sandboxd (fail closed) and says so on each pool. */
  fleetToken: string;
  /** How each node's root token is made from the fleet token (default fleet: it is the token). */
  sandboxdTokens?: NodeTokenMode;
  syncIntervalMs: number;
  /** Pools and templates of this namespace only ('' or absent: all). */
  namespace?: string;
  /** Label selector of the NodeInventories to drive ('' or absent: every node). */
  nodeInventorySelector?: string;
  /**
   * Most replicas kept warm per pool and per namespace (0: no limit). Absent here means none; the
   * binary's flags default to 1,000 and 5,000.
   */
  limits?: ReplicaLimits;
  /** The certificates and keys the leader keeps (absent: none). */
  certificates?: { objects: KeptObjects; times: KeeperTimes };
  /** Leader election, listeners, shutdown timeout (from the shared manager flags). */
  manager?: Partial<Omit<ManagerOptions, 'log' | 'registry' | 'kubeConfig'>>;
}

export interface RunningDriver {
  manager: Manager;
  reconciler: WarmPoolReconciler;
  pusher: TargetPusher | undefined;
  done: Promise<void>;
  stop(): Promise<void>;
}

/** The whole driver in-process: three informers, one controller (leader only), events, sandboxd clients. */
export function startDriver(opts: StartDriverOptions): RunningDriver {
  const { kubeConfig: kc, log, registry } = opts;
  const informer = <T extends KubeObject>(o: Omit<InformerOptions<T>, 'log' | 'registry'>) =>
    createInformer<T>(kc, { ...o, log, registry });
  const pools = informer<SandboxWarmPool>({
    resource: SandboxWarmPoolResource,
    namespace: opts.namespace || undefined,
    parse: parseWarmPool,
  });
  const templates = informer<SandboxTemplate>({
    resource: SandboxTemplateResource,
    namespace: opts.namespace || undefined,
    parse: (o) => parseObject(SandboxTemplateSchema, o),
  });
  const inventories = informer<NodeInventory>({
    resource: NodeInventoryResource,
    labelSelector: opts.nodeInventorySelector || undefined,
    parse: (o) => parseObject(NodeInventorySchema, o),
  });
  const clients =
    opts.fleetToken === ''
      ? undefined
      : fleetClients({ fleetToken: opts.fleetToken, mode: opts.sandboxdTokens ?? 'fleet', inventories: () => inventories.list() });
  const known = new KnownNodeAddresses(() => inventories.list());
  const pusher = clients && new TargetPusher({ clients, known, log, registry });
  const events = createEventRecorder(kc, {
    reportingController: FIELD_MANAGERS.warmpoolDriver,
    reportingInstance: defaultIdentity(),
    log,
    registry,
  });
  const reconciler = new WarmPoolReconciler({
    kubeConfig: kc,
    pools,
    templates,
    inventories,
    pusher,
    events,
    log,
    syncIntervalMs: opts.syncIntervalMs,
    namespace: opts.namespace ?? '',
    ...(opts.limits ? { limits: opts.limits } : {}),
  });
  poolMetrics(registry, { pools, warmByPool: reconciler.warmByPool });
  const toSync = (): (typeof SYNC_REQUEST)[] => [SYNC_REQUEST];
  const ctrl = controller({ name: 'sandboxwarmpool', reconciler, log, registry })
    // Generation changes only: the driver's own status writes must not wake it again.
    .for(pools, { predicates: [generationChanged<SandboxWarmPool>()] })
    .watches(templates, toSync)
    .watches(inventories, toSync)
    .build();
  const manager = new Manager({ log, registry, kubeConfig: kc, ...opts.manager })
    .addInformer(pools)
    .addInformer(templates)
    .addInformer(inventories)
    .add(events)
    .add(ctrl);
  if (opts.certificates)
    manager.add(new CertificateKeeper({ kubeConfig: kc, ...opts.certificates, manager: FIELD_MANAGERS.warmpoolDriver, log, registry }));
  const stopper = new AbortController();
  const done = manager.start(stopper.signal).finally(() => clients?.close());
  return {
    manager,
    reconciler,
    pusher,
    done,
    async stop() {
      stopper.abort();
      await done;
    },
  };
}
