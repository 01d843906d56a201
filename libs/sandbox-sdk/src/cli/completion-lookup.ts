import { EXTENSIONS_API_VERSION } from '@sandbox-scale/scale-core';
import { z } from 'zod';
import { SandboxClient } from '../client';
import { call } from '../kube-api';
import type { CompletionLookup } from './completion';

/** A shell waits on a completion: a lookup that takes longer than this answers nothing. */
const LOOKUP_MS = 5_000;

const NamesSchema = z.looseObject({ items: z.array(z.looseObject({ metadata: z.looseObject({ name: z.string() }) })).default([]) });

function flagValue(words: readonly string[], flag: string): string | undefined {
  const at = words.indexOf(flag);
  if (at >= 0) return words[at + 1];
  return words.find((w) => w.startsWith(`${flag}=`))?.slice(flag.length + 1);
}

/** Names from the cluster the completed line's kubeconfig and context point at. */
export function clusterLookup(words: readonly string[]): CompletionLookup {
  let client: SandboxClient | undefined;
  const clientOf = (): SandboxClient => {
    const kubeconfig = flagValue(words, '--kubeconfig');
    const context = flagValue(words, '--context');
    return (client ??= new SandboxClient({ ...(kubeconfig ? { kubeconfig } : {}), ...(context ? { context } : {}) }));
  };
  const names = async (path: string, resource: string): Promise<string[]> => {
    const raw = await call(
      clientOf().kubeConfig,
      { method: 'GET', path, query: { limit: 500 }, signal: AbortSignal.timeout(LOOKUP_MS) },
      { verb: 'list', resource },
    );
    return NamesSchema.parse(raw).items.map((i) => i.metadata.name);
  };
  return {
    pools: (ns) =>
      names(
        `/apis/${EXTENSIONS_API_VERSION}/namespaces/${encodeURIComponent(ns ?? clientOf().namespace)}/sandboxwarmpools`,
        'sandboxwarmpools',
      ),
    sandboxes: async (ns) =>
      (await clientOf().listSandboxes({ ...(ns ? { namespace: ns } : {}), timeoutMs: LOOKUP_MS })).map((s) => s.metadata.name),
    namespaces: () => names('/api/v1/namespaces', 'namespaces'),
    contexts: () => {
      try {
        return clientOf()
          .kubeConfig.getContexts()
          .map((c) => c.name);
      } catch {
        return [];
      }
    },
  };
}
