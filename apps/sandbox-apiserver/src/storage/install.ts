import type { ResourceStorage } from './rest';
import { SandboxesREST, type SandboxesRESTOptions } from './sandboxes-rest';

/** The storages of agents.x-k8s.io/v1beta1: each by name for wiring, and the map requests are served from. */
export interface InstalledStorages {
  readonly sandboxes: SandboxesREST;
  /** Resource name (plural) → its storage; a resource not in it is a 404. */
  readonly byResource: ReadonlyMap<string, ResourceStorage>;
}

/** The install point (sample-apiserver's InstallAPIGroup, metrics-server's api.Install): resource name → storage. */
export function installStorages(opts: SandboxesRESTOptions): InstalledStorages {
  const sandboxes = new SandboxesREST(opts);
  return { sandboxes, byResource: new Map<string, ResourceStorage>([[sandboxes.resource, sandboxes]]) };
}
