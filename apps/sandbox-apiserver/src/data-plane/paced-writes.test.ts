import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SANDBOX_API_VERSION } from '@sandbox-scale/scale-core';
import type { SandboxExecResult } from './exec-storage';
import { sendExecResult } from './paced-writes';

/** Serves one answer over a real socket and reads it back whole. */
async function answered(result: SandboxExecResult): Promise<{ text: string; chunks: number; type: string | undefined }> {
  const server: Server = createServer((_req, res) => void sendExecResult(res, result));
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  try {
    const { port } = server.address() as AddressInfo;
    return await new Promise((ok, fail) => {
      request({ host: '127.0.0.1', port, method: 'POST' }, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () => ok({ text: Buffer.concat(parts).toString('utf8'), chunks: parts.length, type: res.headers['content-type'] }));
        res.on('error', fail);
      })
        .on('error', fail)
        .end();
    });
  } finally {
    await new Promise((ok) => server.close(ok));
  }
}

describe('sendExecResult', () => {
  it('writes the same JSON as encoding it whole, across slices, control bytes and surrogate pairs', async () => {
    // a pair straddles every slice boundary: the high half sits at the last place of a slice
    const straddling = `${'a'.repeat(64 * 1024 - 1)}😀${'b'.repeat(10)}`;
    const result: SandboxExecResult = {
      apiVersion: SANDBOX_API_VERSION,
      kind: 'SandboxExecResult',
      exitCode: 3,
      stdout: `${'\u0000'.repeat(200_000)}"quoted" \\ back\nslash ${straddling}`,
      stderr: 'é\u001b[31m\u2028',
    };
    const got = await answered(result);
    expect(got.type).toBe('application/json');
    expect(JSON.parse(got.text)).toEqual(result);
    expect(got.text).toBe(JSON.stringify(result));
  });

  it('writes empty output as empty strings', async () => {
    const result: SandboxExecResult = { apiVersion: SANDBOX_API_VERSION, kind: 'SandboxExecResult', exitCode: 0, stdout: '', stderr: '' };
    expect(JSON.parse((await answered(result)).text)).toEqual(result);
  });
});
