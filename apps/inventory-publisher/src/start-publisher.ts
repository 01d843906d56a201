import type { KubeConfig } from '@kubernetes/client-node';
import { Manager, createInformer, followCaFile, type Logger, type ManagerOptions } from '@sandbox-scale/kube-runtime';
import { NodeInventorySchema, parseObject, type NodeInventory } from '@sandbox-scale/scale-core';
import { SandboxdClient } from '@sandbox-scale/sandboxd-client';
import type { Dispatcher } from 'undici';
import type { Registry } from 'prom-client';
import type { NoticeTarget, PublisherConfig } from './config';
import { NodeNotifier } from './node-notifier';
import { NoticeClient } from './notice-client';
import { noticeMetrics } from './publisher-metrics';
import { InventoryPublisher, NodeInventoryResource } from './publisher';

export interface StartPublisherOptions extends PublisherConfig {
  kubeConfig: KubeConfig;
  log: Logger;
  registry: Registry;
  /** Probe and metrics listeners (and how /metrics is guarded), graceful shutdown: from the shared manager flags. Off when absent. */
  manager?: Partial<
    Pick<
      ManagerOptions,
      | 'metricsBindAddress'
      | 'healthProbeBindAddress'
      | 'metricsAuth'
      | 'metricsTlsCertFile'
      | 'metricsTlsPrivateKeyFile'
      | 'gracefulShutdownTimeoutMs'
    >
  >;
  /** A shared keep-alive dispatcher (many publishers in one process, as in the bench). */
  dispatcher?: Dispatcher;
  /** Largest body of one NodeInventory object before the node's entries are split (tests lower it). */
  maxObjectBytes?: number;
  /** Tell the sandbox-apiserver replicas of each change between publishes (docs/adr/0007); off when absent. */
  notices?: NoticeTarget;
}

export interface RunningPublisher {
  publisher: InventoryPublisher;
  manager: Manager;
  /** Present when notices are on. */
  notifier?: NodeNotifier;
  /** The replicas notices go to now (host:port); empty when notices are off. */
  noticeTargets(): readonly string[];
  /** Settles when the manager stops; rejects with the fatal error if it failed. */
  done: Promise<void>;
  stop(): Promise<void>;
}

/**
 * The whole app, in-process: an informer on this node's NodeInventory and the publisher loop
 * under a Manager (no leader election: one publisher per node, each owning its own object).
 */
export function startPublisher(opts: StartPublisherOptions): RunningPublisher {
  const inventories = createInformer<NodeInventory>(opts.kubeConfig, {
    resource: NodeInventoryResource,
    fieldSelector: `metadata.name=${opts.nodeName}`,
    parse: (o) => parseObject(NodeInventorySchema, o),
    log: opts.log,
    registry: opts.registry,
  });
  const sandboxd = new SandboxdClient({ baseUrl: opts.sandboxdUrl, token: opts.fleetToken, dispatcher: opts.dispatcher });
  const noticeClient =
    opts.notices === undefined ? undefined : new NoticeClient({ kubeConfig: opts.kubeConfig, ...opts.notices, log: opts.log });
  if (noticeClient !== undefined && opts.notices?.caFile) followCaFile(opts.notices.caFile, opts.log, (pem) => noticeClient.trust(pem));
  const counted = noticeClient === undefined ? undefined : noticeMetrics(opts.registry);
  const notifier =
    noticeClient === undefined
      ? undefined
      : new NodeNotifier({ node: opts.nodeName, sender: noticeClient, log: opts.log.child({ node: opts.nodeName }), onResult: counted });
  const publisher = new InventoryPublisher({
    config: opts,
    kubeConfig: opts.kubeConfig,
    sandboxd,
    inventories,
    log: opts.log,
    registry: opts.registry,
    ...(opts.maxObjectBytes === undefined ? {} : { maxObjectBytes: opts.maxObjectBytes }),
    ...(notifier === undefined ? {} : { notifier }),
  });
  const manager = new Manager({ log: opts.log, registry: opts.registry, kubeConfig: opts.kubeConfig, ...opts.manager })
    .addInformer(inventories)
    .add(publisher);
  if (noticeClient !== undefined) manager.addInformer(noticeClient.informer);
  if (noticeClient?.caInformer !== undefined) manager.addInformer(noticeClient.caInformer);
  const stopper = new AbortController();
  const done = manager.start(stopper.signal).finally(() => {
    noticeClient?.close();
    return sandboxd.close();
  });
  return {
    publisher,
    manager,
    ...(notifier === undefined ? {} : { notifier }),
    noticeTargets: () => noticeClient?.targets() ?? [],
    done,
    async stop() {
      stopper.abort();
      await done;
    },
  };
}
