import type { Sandbox, ServedSandbox } from '@sandbox-scale/scale-core';
import type { z } from 'zod';
import type { Watchable } from '../resource/events';
import type { ListQuery } from '../resource/list-query';
import type { DeleteRequest } from './delete-sandbox';
import type { PatchType } from './patch-sandbox';
import type { TableOptions } from './sandbox-table';

/** One page of a list. */
export interface ObjectList {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number };
  readonly items: ServedSandbox[];
}

export interface PatchRequest {
  readonly type: PatchType;
  /** The patch document; undefined for an empty body. */
  readonly patch: unknown;
  readonly dryRun: boolean;
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
  create(namespace: string, body: unknown, opts: { dryRun: boolean }): Promise<Sandbox>;
  delete(namespace: string, name: string, req: DeleteRequest): Promise<ServedSandbox>;
  patch(namespace: string, name: string, req: PatchRequest): Promise<ServedSandbox>;
  /** POST to a subresource (the lifecycle actions). */
  act(namespace: string, name: string, action: string, body: unknown, dryRun: boolean): Promise<Record<string, unknown> | ServedSandbox>;
  convertToTable(items: readonly ServedSandbox[], opts: TableOptions): Record<string, unknown>;
}
