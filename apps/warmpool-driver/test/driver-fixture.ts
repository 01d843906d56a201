import type { KubeConfig } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { runSuffix, testKubeConfig } from '@sandbox-scale/e2e';
import { ResourceClient } from '@sandbox-scale/kube-runtime';
import { captureLog } from '@sandbox-scale/kube-runtime/testing';
import { EXTENSIONS_API_VERSION, SandboxWarmPoolSchema, parseObject, type SandboxWarmPool } from '@sandbox-scale/scale-core';
import { SandboxdClient, type NodeInfo } from '@sandbox-scale/sandboxd-client';
import { startSim, type Sim } from '@sandbox-scale/sandboxd-sim';
import { NodeInventoryResource, startPublisher, type RunningPublisher } from '@sandbox-scale/inventory-publisher';
import { SandboxTemplateResource, SandboxWarmPoolResource } from '../src/index';

export const TOKEN = 'fleet-secret';
export const kc = testKubeConfig();
export const poolsApi = new ResourceClient(kc, SandboxWarmPoolResource);
export const templatesApi = new ResourceClient(kc, SandboxTemplateResource);
export const inventoriesApi = new ResourceClient(kc, NodeInventoryResource);

/** A fleet of simulated nodes, each with its in-process publisher, labelled so only this suite's driver sees them. */
export interface Fleet {
  sim: Sim;
  publishers: RunningPublisher[];
  nodeNames: string[];
  selector: string;
  info(i: number): Promise<NodeInfo>;
  /** A root client of node i with the fleet token: lets a test change the node behind the driver's back. */
  client(i: number): SandboxdClient;
  stop(): Promise<void>;
}

/** `kubeConfig`: the control plane the publishers write to (the shared one unless a test runs its own). */
export async function startFleet(nodes: number, kubeConfig: KubeConfig = kc): Promise<Fleet> {
  const sim = await startSim({ nodes, speed: 0, token: TOKEN, refillTickMs: 200 });
  const suffix = runSuffix();
  const selector = `sandbox-scale.test/fleet=${suffix}`;
  const nodeNames = sim.nodes.map((n, i) => `drv-${suffix}-${i}`);
  const { log } = captureLog();
  const publishers = sim.nodes.map((n, i) =>
    startPublisher({
      nodeName: nodeNames[i] ?? '',
      sandboxdUrl: n.url,
      advertiseAddress: n.addr,
      publishIntervalMs: 300,
      fleetToken: TOKEN,
      labels: { 'sandbox-scale.test/fleet': suffix },
      kubeConfig,
      log,
      registry: new Registry(),
    }),
  );
  const clients = sim.nodes.map((n) => new SandboxdClient({ baseUrl: n.url, token: TOKEN }));
  return {
    sim,
    publishers,
    nodeNames,
    selector,
    info: (i) => (clients[i] as SandboxdClient).info(),
    client: (i) => clients[i] as SandboxdClient,
    async stop() {
      await Promise.all(publishers.map((p) => p.stop()));
      await Promise.all(clients.map((c) => c.close()));
      await sim.stop();
      const inventories = kubeConfig === kc ? inventoriesApi : new ResourceClient(kubeConfig, NodeInventoryResource);
      await Promise.all(nodeNames.map((n) => inventories.delete(undefined, n).catch(() => undefined)));
    },
  };
}

export function template(ns: string, name: string, image: string): Record<string, unknown> {
  return {
    apiVersion: EXTENSIONS_API_VERSION,
    kind: 'SandboxTemplate',
    metadata: { name, namespace: ns },
    spec: { podTemplate: { spec: { containers: [{ name: 'main', image }] } } },
  };
}

export function pool(ns: string, name: string, templateName: string, replicas: number): Record<string, unknown> {
  return {
    apiVersion: EXTENSIONS_API_VERSION,
    kind: 'SandboxWarmPool',
    metadata: { name, namespace: ns },
    spec: { replicas, sandboxTemplateRef: { name: templateName } },
  };
}

/** The pool's condition of `type`, if it has one. */
export const condition = (
  p: { status?: { conditions?: Array<{ type: string; status: string; reason: string; message: string }> } },
  type: string,
) => p.status?.conditions?.find((c) => c.type === type);

export async function readPool(ns: string, name: string): Promise<SandboxWarmPool> {
  return parseObject(SandboxWarmPoolSchema, await poolsApi.get(ns, name));
}

/** Per node, the effective target of the key with this image (0 when the node has no such pool). */
export async function targetsOf(fleet: Fleet, image: string): Promise<number[]> {
  const infos = await Promise.all(fleet.sim.nodes.map((_, i) => fleet.info(i)));
  return infos.map((info) => info.pools.filter((p) => p.key.template === image).reduce((a, p) => a + p.target, 0));
}

export async function keysOf(fleet: Fleet, i: number): Promise<string[]> {
  return (await fleet.info(i)).pools.map((p) => p.key.template).sort();
}
