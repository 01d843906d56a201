import { ANNOTATIONS, type ServedSandbox } from '@sandbox-scale/scale-core';
import { metadataOnly } from '../resource/partial-metadata';

/** What a table row carries besides its cells (`includeObject`): nothing, the metadata, or the object. */
export type IncludeObject = 'None' | 'Metadata' | 'Object';

export interface TableOptions {
  readonly resourceVersion: string;
  readonly continue?: string;
  readonly include: IncludeObject;
  /** meta.k8s.io version the client asked for. */
  readonly version: string;
  /** false: rows only, for every watch event after the first. */
  readonly columns?: boolean;
  readonly now?: Date;
}

/** Columns of `kubectl get sandboxes`; priority 1 shows with -o wide. */
export const COLUMN_DEFINITIONS = [
  { name: 'Name', type: 'string', format: 'name', description: 'Name of the sandbox', priority: 0 },
  { name: 'Ready', type: 'string', format: '', description: 'Status of the Ready condition', priority: 0 },
  { name: 'Reason', type: 'string', format: '', description: 'Reason of the Ready condition (the node-reported phase)', priority: 0 },
  { name: 'Node', type: 'string', format: '', description: 'Node whose sandboxd holds the sandbox', priority: 0 },
  { name: 'Age', type: 'string', format: 'date', description: 'Time since the sandbox was claimed', priority: 0 },
  { name: 'IP', type: 'string', format: '', description: 'First address of the sandbox', priority: 1 },
  { name: 'Claim-ID', type: 'string', format: '', description: 'sandboxd claim id', priority: 1 },
] as const;

/** `5s`, `3m`, `2h10m`, `4d3h` — kubectl's humanized age. */
export function humanAge(created: string | null | undefined, now: Date): string {
  if (!created) return '<unknown>';
  const s = Math.max(0, Math.floor((now.getTime() - new Date(created).getTime()) / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return `${m}m${s % 60 ? `${s % 60}s` : ''}`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h${m % 60 ? `${m % 60}m` : ''}`;
  const d = Math.floor(h / 24);
  return `${d}d${h % 24 ? `${h % 24}h` : ''}`;
}

function rowOf(s: ServedSandbox, include: IncludeObject, now: Date): Record<string, unknown> {
  const ready = s.status.conditions.find((c) => c.type === 'Ready');
  const cells = [
    s.metadata.name,
    ready?.status ?? 'Unknown',
    ready?.reason ?? '',
    s.status.nodeName,
    humanAge(s.metadata.creationTimestamp, now),
    s.status.podIPs?.[0] ?? '<none>',
    s.metadata.annotations?.[ANNOTATIONS.claimId] ?? '',
  ];
  const object = include === 'None' ? undefined : include === 'Object' ? s : metadataOnly(s);
  return { cells, ...(object === undefined ? {} : { object }) };
}

/** The view of sandboxes as a Table, what kubectl get prints (one row for a get, many for a list, one per watch event). */
export function sandboxTable(items: readonly ServedSandbox[], opts: TableOptions): Record<string, unknown> {
  const now = opts.now ?? new Date();
  return {
    kind: 'Table',
    apiVersion: `meta.k8s.io/${opts.version}`,
    metadata: { resourceVersion: opts.resourceVersion, ...(opts.continue ? { continue: opts.continue } : {}) },
    columnDefinitions: opts.columns === false ? [] : COLUMN_DEFINITIONS,
    rows: items.map((s) => rowOf(s, opts.include, now)),
  };
}
