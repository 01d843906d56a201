import type { Sandbox, ServedSandbox } from '@sandbox-scale/scale-core';
import type { z } from 'zod';
import type { Watchable } from '../resource/events';
import type { ListQuery } from '../resource/list-query';
import type { DeleteRequest } from './delete-sandbox';
import type { RequestPatchType } from './patch-sandbox';
import type { TableOptions } from './sandbox-table';

/** One page of a list. */
export interface ObjectList {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number };
  readonly items: ServedSandbox[];
}

export interface PatchRequest {
  readonly type: RequestPatchType;
  /** The patch document (an apply's configuration); undefined for an empty body. */
  readonly patch: unknown;
  readonly dryRun: boolean;
  /** Who makes the change: it owns the fields it sets (metadata.managedFields). */
  readonly fieldManager: string;
  /** Server-side apply only: take conflicting fields from their managers. */
  readonly force: boolean;
}

export interface CreateRequest {
  readonly dryRun: boolean;
  /** Who creates it: it owns the fields it sets, once anything of the create is kept. */
  readonly fieldManager?: string;
}

/** A patch's answer: the object, and whether the patch created it (a server-side apply of a new name: 201). */
export interface PatchResult {
  readonly object: ServedSandbox | Sandbox;
  readonly created: boolean;
}

/**
 * The storage of one served resource, as kube's rest.Storage with the verb interfaces it
 * implements (Lister, Getter, Watcher, Creater, GracefulDeleter, Patcher, TableConvertor): the
 * generic resource handler in http/ speaks only to this. Request parsing (query, body, media
 * types) happens before, in http/; what comes here is typed.
 */
export interface ResourceStorage extends Watchable {
  /** The plural the install map serves it under. */
  readonly resource: string;
  /** The object schema: create bodies are checked against it for unknown fields. */
  readonly schema: z.ZodType;
  /** Fields a field selector may name. */
  readonly selectableFields: readonly string[];
  /** One page; a page of a list another replica began is served by that replica. */
  list(q: ListQuery): Promise<ObjectList>;
  get(namespace: string, name: string): Promise<ServedSandbox>;
  create(namespace: string, body: unknown, opts: CreateRequest): Promise<Sandbox>;
  delete(namespace: string, name: string, req: DeleteRequest): Promise<ServedSandbox>;
  patch(namespace: string, name: string, req: PatchRequest): Promise<PatchResult>;
  /** POST to a subresource (the lifecycle actions), or a GET of one that only reads (stats, snapshots), with no body. */
  act(namespace: string, name: string, action: string, body: unknown, dryRun: boolean): Promise<Record<string, unknown> | ServedSandbox>;
  convertToTable(items: readonly ServedSandbox[], opts: TableOptions): Record<string, unknown>;
}
