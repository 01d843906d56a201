import { Readable } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import { statusErrorOf } from '@sandbox-scale/scale-core';
import { PATCH_TYPES } from '../storage/patch-sandbox';
import { patchTypeOf, readPatch } from './patch-request';

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
  it('takes merge, JSON and strategic merge patch media types and refuses apply with what to use', async () => {
    expect(patchTypeOf('application/merge-patch+json; charset=utf-8')).toBe(PATCH_TYPES.merge);
    expect(patchTypeOf('application/json-patch+json')).toBe(PATCH_TYPES.json);
    expect(patchTypeOf('application/strategic-merge-patch+json')).toBe(PATCH_TYPES.strategic);
    const apply = await codeOf(() => patchTypeOf('application/apply-patch+yaml'));
    expect(apply.code).toBe(415);
    expect(apply.message).toContain('merge patch');
    expect((await codeOf(() => patchTypeOf(undefined))).code).toBe(415);
  });

  it('reads the patch document: empty is undefined, bad JSON a 400 that says so', async () => {
    await expect(readPatch(requestOf('{"metadata":{"labels":{"a":"b"}}}'))).resolves.toEqual({ metadata: { labels: { a: 'b' } } });
    await expect(readPatch(requestOf('  '))).resolves.toBeUndefined();
    const bad = await codeOf(() => readPatch(requestOf('{nope')));
    expect(bad.code).toBe(400);
    expect(bad.message).toContain('invalid JSON patch body');
  });
});
