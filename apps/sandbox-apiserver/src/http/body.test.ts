import { Readable } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import { statusForError } from '@sandbox-scale/scale-core';
import { readBody } from './body';

function req(body: string, contentType?: string): IncomingMessage {
  const r = Readable.from([Buffer.from(body)]) as unknown as IncomingMessage;
  r.headers = contentType === undefined ? {} : { 'content-type': contentType };
  return r;
}

async function statusOf(p: Promise<unknown>): Promise<ReturnType<typeof statusForError> | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    return statusForError(err);
  }
}

describe('readBody', () => {
  it.each([
    ['malformed YAML', 'a: [1, 2\n  b: {', 'application/yaml', 400],
    [
      'a YAML alias bomb',
      `a: &a [x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n`,
      'application/yaml',
      400,
    ],
    ['two YAML documents', 'a: 1\n---\nb: 2\n', 'application/yaml', 400],
    ['malformed JSON', '{"kind": ', 'application/json', 400],
    ['an unknown media type', '{}', 'text/plain', 415],
  ])('answers %s with a %s-class Status', async (_what, body, type, code) => {
    expect(await statusOf(readBody(req(body, type)))).toMatchObject({ code });
  });

  it('decodes YAML and JSON bodies', async () => {
    await expect(readBody(req('kind: Sandbox\n', 'application/yaml; charset=utf-8'))).resolves.toEqual({ kind: 'Sandbox' });
    await expect(readBody(req('{"kind":"Sandbox"}'))).resolves.toEqual({ kind: 'Sandbox' });
  });
});
