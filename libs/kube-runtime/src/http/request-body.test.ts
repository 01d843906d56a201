import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { statusForError } from '@sandbox-scale/scale-core';
import { readRequestBody, type RequestBodyOptions } from './request-body';

function req(body: string, contentType?: string): IncomingMessage {
  const r = Readable.from([Buffer.from(body)]) as unknown as IncomingMessage;
  r.headers = contentType === undefined ? {} : { 'content-type': contentType };
  return r;
}

async function codeOf(p: Promise<unknown>): Promise<number | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    return statusForError(err).code;
  }
}

describe('readRequestBody', () => {
  const json: RequestBodyOptions = { maxBytes: 64 };

  it('decodes JSON, with or without a content type', async () => {
    await expect(readRequestBody(req('{"a":1}', 'application/json; charset=utf-8'), json)).resolves.toEqual({ a: 1 });
    await expect(readRequestBody(req('{"a":1}'), json)).resolves.toEqual({ a: 1 });
  });

  it('decodes YAML only where it is allowed, naming the accepted types otherwise', async () => {
    await expect(readRequestBody(req('a: 1\n', 'application/yaml'), { ...json, yaml: true })).resolves.toEqual({ a: 1 });
    await expect(readRequestBody(req('a: 1\n', 'application/yaml'), json)).rejects.toThrow(
      'accepted media types include: application/json',
    );
    expect(await codeOf(readRequestBody(req('{}', 'text/plain'), { ...json, yaml: true }))).toBe(415);
  });

  it('answers 400 for a malformed, oversized or (unless optional) empty body', async () => {
    expect(await codeOf(readRequestBody(req('{"a": '), json))).toBe(400);
    expect(await codeOf(readRequestBody(req(`{"a":"${'x'.repeat(64)}"}`), json))).toBe(400);
    expect(await codeOf(readRequestBody(req('  '), json))).toBe(400);
    await expect(readRequestBody(req('  '), { ...json, optional: true })).resolves.toBeUndefined();
  });
});
