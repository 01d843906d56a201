import { Readable } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import { statusErrorOf } from '@sandbox-scale/scale-core';
import { APPLY_PATCH_TYPE, PATCH_TYPES } from '../storage/patch-sandbox';
import { fieldManagerOf, forceOf, patchTypeOf, readPatch } from './patch-request';

const codeOf = async (fn: () => unknown): Promise<{ code?: number; message?: string }> => {
  try {
    await fn();
  } catch (err) {
    const e = statusErrorOf(err);
    return { code: e?.code, message: e?.message };
  }
  throw new Error('no error');
};

const requestOf = (body: string): IncomingMessage => Readable.from([Buffer.from(body)]) as unknown as IncomingMessage;

describe('PATCH request', () => {
  it('takes merge, JSON, strategic merge and apply media types; any other is a 415 listing them', async () => {
    expect(patchTypeOf('application/merge-patch+json; charset=utf-8')).toBe(PATCH_TYPES.merge);
    expect(patchTypeOf('application/json-patch+json')).toBe(PATCH_TYPES.json);
    expect(patchTypeOf('application/strategic-merge-patch+json')).toBe(PATCH_TYPES.strategic);
    expect(patchTypeOf('application/apply-patch+yaml')).toBe(APPLY_PATCH_TYPE);
    const other = await codeOf(() => patchTypeOf('text/plain'));
    expect(other.code).toBe(415);
    expect(other.message).toContain('application/apply-patch+yaml');
    expect((await codeOf(() => patchTypeOf(undefined))).code).toBe(415);
  });

  it('reads an apply configuration as YAML or JSON, refusing aliases and prototype keys', async () => {
    const yaml = 'apiVersion: agents.x-k8s.io/v1beta1\nkind: Sandbox\nmetadata:\n  name: a\n  labels:\n    team: x\n';
    await expect(readPatch(requestOf(yaml), APPLY_PATCH_TYPE)).resolves.toEqual({
      apiVersion: 'agents.x-k8s.io/v1beta1',
      kind: 'Sandbox',
      metadata: { name: 'a', labels: { team: 'x' } },
    });
    await expect(readPatch(requestOf('{"kind":"Sandbox"}'), APPLY_PATCH_TYPE)).resolves.toEqual({ kind: 'Sandbox' });
    expect((await codeOf(() => readPatch(requestOf('a: &x [1]\nb: *x\n'), APPLY_PATCH_TYPE))).code).toBe(400);
    expect(
      (await codeOf(() => readPatch(requestOf('metadata:\n  labels:\n    __proto__: {isAdmin: true}\n'), APPLY_PATCH_TYPE))).code,
    ).toBe(422);
    expect((await codeOf(() => readPatch(requestOf('a: 1\na: 2\n'), APPLY_PATCH_TYPE))).code).toBe(400);
    expect(({} as Record<string, unknown>)['isAdmin']).toBeUndefined();
  });

  it('names the field manager as kube-apiserver does: the parameter, else the user agent; apply must name it', async () => {
    const p = (q: string): URLSearchParams => new URLSearchParams(q);
    expect(fieldManagerOf(p('fieldManager=flux'), 'kubectl/v1.34', true)).toBe('flux');
    expect(fieldManagerOf(p(''), 'kubectl/v1.34.1 (linux/amd64)', false)).toBe('kubectl');
    expect((await codeOf(() => fieldManagerOf(p(''), 'kubectl/v1', true))).code).toBe(400);
    expect((await codeOf(() => fieldManagerOf(p(`fieldManager=${'x'.repeat(129)}`), undefined, false))).code).toBe(400);
    expect((await codeOf(() => fieldManagerOf(p('fieldManager=%0Abad'), undefined, false))).code).toBe(400);
    expect(forceOf(p('force=true'), true)).toBe(true);
    expect(forceOf(p(''), true)).toBe(false);
    expect((await codeOf(() => forceOf(p('force=true'), false))).code).toBe(400);
    expect((await codeOf(() => forceOf(p('force=yes'), true))).code).toBe(400);
  });

  it('reads the patch document: empty is undefined, bad JSON a 400 that says so', async () => {
    await expect(readPatch(requestOf('{"metadata":{"labels":{"a":"b"}}}'))).resolves.toEqual({ metadata: { labels: { a: 'b' } } });
    await expect(readPatch(requestOf('  '))).resolves.toBeUndefined();
    const bad = await codeOf(() => readPatch(requestOf('{nope')));
    expect(bad.code).toBe(400);
    expect(bad.message).toContain('invalid JSON patch body');
  });
});
