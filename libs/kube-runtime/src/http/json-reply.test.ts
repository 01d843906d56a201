import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { statusForError, StatusError } from '@sandbox-scale/scale-core';
import { sendJson, sendKubeStatus } from './json-reply';

describe('JSON and Status replies', () => {
  let server: Server;
  let answer: (res: ServerResponse) => void = () => undefined;
  let url = '';

  beforeAll(async () => {
    server = createServer((_req, res) => answer(res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('writes a JSON body with its length and extra headers', async () => {
    answer = (res) => sendJson(res, 201, { a: 'é' }, { 'X-Extra': '1' });
    const r = await fetch(url);
    expect(r.status).toBe(201);
    expect(r.headers.get('content-type')).toBe('application/json');
    expect(r.headers.get('content-length')).toBe(String(Buffer.byteLength('{"a":"é"}')));
    expect(r.headers.get('x-extra')).toBe('1');
    expect(await r.json()).toEqual({ a: 'é' });
  });

  it('writes a Status with its code, and Retry-After only where the Status or the caller names one', async () => {
    const unavailable = statusForError(new StatusError('ServiceUnavailable', 'busy'));
    const retrying = statusForError(new StatusError('ServiceUnavailable', 'busy', { retryAfterSeconds: 7 }));
    answer = (res) => sendKubeStatus(res, unavailable);
    let r = await fetch(url);
    expect([r.status, r.headers.get('retry-after')]).toEqual([503, null]);
    expect(await r.json()).toMatchObject({ kind: 'Status', code: 503, message: 'busy' });
    answer = (res) => sendKubeStatus(res, retrying);
    r = await fetch(url);
    expect(r.headers.get('retry-after')).toBe('7');
    answer = (res) => sendKubeStatus(res, unavailable, { busyRetryAfterSeconds: 1, body: { replaced: true } });
    r = await fetch(url);
    expect(r.headers.get('retry-after')).toBe('1');
    expect(await r.json()).toEqual({ replaced: true });
  });
});
