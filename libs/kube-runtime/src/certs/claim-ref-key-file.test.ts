import { randomBytes } from 'node:crypto';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatOwnerRef, OwnerRefKey, provenOwnerOf, type SandboxOwner } from '@sandbox-scale/scale-core';
import { Registry } from 'prom-client';
import { captureLog } from '../testing/capture-log';
import { followClaimRefKey, type ClaimRefKeyFollower } from './claim-ref-key-file';

const owner: SandboxOwner = { kind: 'FastPathClaim', uid: '0b3e6f0c-2d7a-4a55-9c51-6a0f3f1d2e4b', namespace: 'team-a', name: 'f1' };
const newKey = (): string => randomBytes(32).toString('base64');

describe('following the claim-reference keyring file', () => {
  let dir: string;
  let follower: ClaimRefKeyFollower | undefined;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'claim-ref-key-'));
  });
  afterEach(() => {
    follower?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  // written whole, then renamed over the file, as an atomic Secret update reaches the pod
  const write = (text: string): void => {
    writeFileSync(join(dir, 'key.tmp'), text);
    renameSync(join(dir, 'key.tmp'), join(dir, 'key'));
  };

  async function keyInfo(registry: Registry): Promise<string[]> {
    const metric = await registry.getSingleMetric('sandbox_scale_claim_ref_key_info')?.get();
    return (metric?.values ?? []).map((v) => `${String(v.labels.role)}:${String(v.labels.key_id)}`).sort();
  }

  it('each step of a rotation reaches the key every component holds, and the metric says which keys', async () => {
    const [k1, k2] = [newKey(), newKey()];
    write(k1);
    const key = OwnerRefKey.fromText(k1);
    const registry = new Registry();
    const { log, lines } = captureLog();
    follower = await followClaimRefKey({ file: join(dir, 'key'), key, log, registry, pollMs: 3_600_000 });
    const id1 = OwnerRefKey.fromText(k1).ids[0] as string;
    const id2 = OwnerRefKey.fromText(k2).ids[0] as string;
    expect(await keyInfo(registry)).toEqual([`signs:${id1}`]);
    const before = formatOwnerRef(owner, key);

    write(`${k1}\n${k2}\n`);
    expect(await follower.check()).toBe(true);
    expect(formatOwnerRef(owner, key)).toBe(before);
    expect(await keyInfo(registry)).toEqual([`signs:${id1}`, `verifies:${id2}`].sort());

    write(`${k2}\n${k1}\n`);
    expect(await follower.check()).toBe(true);
    const after = formatOwnerRef(owner, key);
    expect(after).not.toBe(before);
    expect(provenOwnerOf(before, key)).toBeDefined();

    write(`${k2}\n`);
    expect(await follower.check()).toBe(true);
    expect(provenOwnerOf(before, key)).toBeUndefined();
    expect(provenOwnerOf(after, key)).toBeDefined();
    expect(await keyInfo(registry)).toEqual([`signs:${id2}`]);
    // the log names the keys by their ids, never by themselves
    const logged = JSON.stringify(lines);
    expect(logged).toContain(id2);
    for (const k of [k1, k2]) expect(logged).not.toContain(k.slice(0, 12));
  });

  it('a bad edit or an emptied file keeps the keys in use', async () => {
    const k1 = newKey();
    write(k1);
    const key = OwnerRefKey.fromText(k1);
    const { log } = captureLog();
    follower = await followClaimRefKey({ file: join(dir, 'key'), key, log, registry: new Registry(), pollMs: 3_600_000 });
    const ref = formatOwnerRef(owner, key);
    for (const bad of ['', `${k1}\nc2hvcnQ=\n`, 'not base64!']) {
      write(bad);
      expect(await follower.check()).toBe(false);
      expect(formatOwnerRef(owner, key)).toBe(ref);
    }
    // the file disappearing (a volume unmounted) keeps them too
    rmSync(join(dir, 'key'));
    expect(await follower.check()).toBe(false);
    expect(provenOwnerOf(ref, key)).toBeDefined();
  });

  it('a keyring from the environment (no file) is published and never changes', async () => {
    const key = OwnerRefKey.fromText(newKey());
    const registry = new Registry();
    follower = await followClaimRefKey({ file: '', key, log: captureLog().log, registry });
    expect(await follower.check()).toBe(false);
    expect(await keyInfo(registry)).toEqual([`signs:${key.ids[0] as string}`]);
  });
});
