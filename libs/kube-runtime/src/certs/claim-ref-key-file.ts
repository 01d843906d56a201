import { OwnerRefKey, isInvalidOwnerRefKey } from '@sandbox-scale/scale-core';
import type { Registry } from 'prom-client';
import type { Logger } from '../log/logger';
import { gauge } from '../metrics/metric-factory';
import { WatchedFiles } from './watched-files';

export interface FollowClaimRefKeyOptions {
  /** The keyring file (`--claim-ref-key-file`); '' = the key came from the environment and never changes. */
  file: string;
  /** The keyring every component of the app holds: its keys are replaced in place on each change. */
  key: OwnerRefKey;
  log: Logger;
  registry: Registry;
  pollMs?: number;
}

export interface ClaimRefKeyFollower {
  /** One read now (the timer's, and a test's): resolves true when the keys changed. */
  check(): Promise<boolean>;
  close(): void;
}

/** Whether the text is a usable keyring: a file caught half-written, or a bad edit, keeps the keys in use. */
function isKeyring({ key }: Readonly<Record<'key', string>>): boolean {
  try {
    OwnerRefKey.fromText(key);
    return true;
  } catch (err) {
    if (isInvalidOwnerRefKey(err)) return false;
    throw err;
  }
}

/**
 * Follows the claim-reference keyring file (a Secret mount): when a rotation adds, promotes or
 * drops a key, every reference this replica writes or proves from then on uses the new ring,
 * with no restart. Exports `sandbox_scale_claim_ref_key_info{key_id,role}` so an operator (and
 * the rotation test) can see that every replica holds the keys a step needs before taking the
 * next.
 */
export async function followClaimRefKey(o: FollowClaimRefKeyOptions): Promise<ClaimRefKeyFollower> {
  const info = gauge(
    o.registry,
    'sandbox_scale_claim_ref_key_info',
    'The claim-reference keys this replica holds, by a hash of each (never the key): role "signs" for the one it signs with, "verifies" for the others',
    ['key_id', 'role'],
  );
  const publish = (): void => {
    info.reset();
    o.key.ids.forEach((id, i) => info.set({ key_id: id, role: i === 0 ? 'signs' : 'verifies' }, 1));
  };
  publish();
  if (o.file === '') return { check: () => Promise.resolve(false), close: () => undefined };
  const watched = await WatchedFiles.open(
    { key: o.file },
    { valid: isKeyring, log: o.log, ...(o.pollMs !== undefined ? { pollMs: o.pollMs } : {}) },
  );
  watched.onChange(({ key }) => {
    o.key.replaceWith(OwnerRefKey.fromText(key));
    publish();
    o.log.info({ keyIds: o.key.ids }, 'claim-reference keys changed: signing with the first, verifying with all');
  });
  return { check: () => watched.check(), close: () => watched.close() };
}
