import { BadRequestError, ConflictError, issuesText, StatusError, type ServedSandbox } from '@sandbox-scale/scale-core';
import { z } from 'zod';
import { dryRunOf } from '../resource/dry-run';
import { actionable, type SandboxStorage } from './sandbox-storage';

const DeleteOptionsSchema = z.looseObject({
  dryRun: z.array(z.string()).optional(),
  preconditions: z.looseObject({ uid: z.string().nullish(), resourceVersion: z.string().nullish() }).nullish(),
});

type DeleteOptions = z.infer<typeof DeleteOptionsSchema>;

function deleteOptionsOf(body: unknown): DeleteOptions {
  if (body === undefined) return {};
  const parsed = DeleteOptionsSchema.safeParse(body);
  if (!parsed.success) throw new BadRequestError(`the body is not a DeleteOptions: ${issuesText(parsed.error)}`);
  return parsed.data;
}

/** 409 when the caller's uid or resourceVersion is not the object's, worded as kube-apiserver words it. */
export function checkPreconditions(object: ServedSandbox, p: NonNullable<DeleteOptions['preconditions']>): void {
  const name = object.metadata.name;
  if (p.uid && p.uid !== object.metadata.uid)
    throw new ConflictError(`Precondition failed: UID in precondition: ${p.uid}, UID in object meta: ${object.metadata.uid ?? ''}`, {
      name,
    });
  if (p.resourceVersion && p.resourceVersion !== object.metadata.resourceVersion) {
    throw new ConflictError(
      `Precondition failed: ResourceVersion in precondition: ${p.resourceVersion}, ResourceVersion in object meta: ${object.metadata.resourceVersion ?? ''}`,
      { name },
    );
  }
}

export interface DeleteRequest {
  /** dryRun of the query; the DeleteOptions body may ask for one too. */
  readonly dryRun: boolean;
  /** The DeleteOptions body as sent (a peer forwards it as is), checked here. */
  readonly body: unknown;
}

/**
 * Delete: release by claim id on the owning node —
 * also for a sandbox created moments ago — then hide it at once so list, get and watch agree
 * before the node republishes. Preconditions are honoured; dryRun releases nothing.
 */
export async function deleteSandbox(storage: SandboxStorage, namespace: string, name: string, req: DeleteRequest): Promise<ServedSandbox> {
  const opts = deleteOptionsOf(req.body);
  const dryRun = req.dryRun || dryRunOf(opts.dryRun ?? []);
  const loc = actionable(await storage.locate(namespace, name), namespace, name, 'delete');
  checkPreconditions(loc.object, opts.preconditions ?? {});
  if (dryRun) return loc.object;
  if (loc.claimId === '')
    throw new StatusError('InternalError', `sandbox ${namespace}/${name} carries no claim id; refusing to release by name`);
  await storage.router.clientFor(loc.node, 'release', loc.claimId).release(loc.claimId, { signal: AbortSignal.timeout(10_000) });
  storage.index.deleteByName(namespace, name);
  storage.cache.markReleased(namespace, name, loc.claimId);
  return loc.object;
}
