import {
  SandboxdClient,
  SandboxdClientSet,
  asNodeAtCapacity,
  asSandboxdHttpError,
  createSandboxdAgent,
  DeadlineSignals,
  isAbortError,
  isMalformedReply,
  isNodeAtCapacity,
  isReplyTooLarge,
  isTransportError,
} from '../src';
import { replyJson, startStubNode, type StubNode } from './stub-node';

const DEADLINE = '2026-07-06T00:05:00Z';
const claimBody = { id: 'sb_abc', token: 'sbtok', deadline: DEADLINE, owner_addr: '10.0.0.5:7777' };

async function caught(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

describe('SandboxdClient against a stub node', () => {
  let stub: StubNode;
  let client: SandboxdClient;

  beforeEach(async () => {
    stub = await startStubNode();
    client = new SandboxdClient({ baseUrl: `${stub.url}/`, token: 'root-token' });
  });
  afterEach(async () => {
    await client.close();
    await stub.close();
  });

  it('claims with the root token and returns id, token, deadline and owner', async () => {
    stub.setHandler((call, res) => replyJson(res, 200, call.path === '/v1/claim' ? claimBody : {}));
    const c = await client.claim({ template: 'base:24.04', ttlSeconds: 0 });
    expect(c).toMatchObject({
      id: 'sb_abc',
      token: 'sbtok',
      ownerAddr: '10.0.0.5:7777',
      ownerUrl: 'http://10.0.0.5:7777',
      nodeUrl: stub.url,
    });
    expect(c.deadline?.toISOString()).toBe('2026-07-06T00:05:00.000Z');
    expect(stub.calls[0]).toMatchObject({ method: 'POST', path: '/v1/claim', authorization: 'Bearer root-token' });
    // zero-valued optional fields are left out
    expect(JSON.parse(stub.calls[0]?.body ?? '')).toEqual({ template: 'base:24.04' });
  });

  it('maps 429 to NodeAtCapacityError with the node message', async () => {
    stub.setHandler((_c, res) => replyJson(res, 429, { error: 'node claim quota reached: node draining' }));
    const err = await caught(client.claim({ template: 'base:24.04' }));
    expect(isNodeAtCapacity(err)).toBe(true);
    expect(asNodeAtCapacity(err)).toMatchObject({ statusCode: 429, message: 'node claim quota reached: node draining', candidates: [] });
  });

  it('finds typed errors through a cause chain', async () => {
    stub.setHandler((_c, res) => replyJson(res, 429, { error: 'full' }));
    const inner = await caught(client.claim({ template: 't' }));
    const wrapped = new Error('gateway claim failed', { cause: new Error('node n1', { cause: inner }) });
    expect(isNodeAtCapacity(wrapped)).toBe(true);
    expect(asNodeAtCapacity(wrapped)?.message).toBe('full');
    expect(isNodeAtCapacity(new Error('full'))).toBe(false);
  });

  it('maps a redirect-only 200 to NodeAtCapacityError carrying the candidates', async () => {
    stub.setHandler((_c, res) => replyJson(res, 200, { redirect: ['10.0.0.6:7777', 'https://n7.example.com'] }));
    const err = asNodeAtCapacity(await caught(client.claim({ template: 'base:24.04' })));
    expect(err?.redirect).toEqual(['10.0.0.6:7777', 'https://n7.example.com']);
    expect(err?.candidates).toEqual(['http://10.0.0.6:7777', 'https://n7.example.com']);
  });

  it('maps an empty 200 to NodeAtCapacityError without candidates', async () => {
    stub.setHandler((_c, res) => {
      res.writeHead(200);
      res.end();
    });
    expect(asNodeAtCapacity(await caught(client.claim({ template: 't' })))?.candidates).toEqual([]);
  });

  it('maps 500 to SandboxdHttpError with status and message', async () => {
    stub.setHandler((_c, res) => replyJson(res, 500, { error: 'provisioning failed' }));
    const err = asSandboxdHttpError(await caught(client.claim({ template: 'base:24.04' })));
    expect(err).toMatchObject({ statusCode: 500, message: 'provisioning failed', operation: 'claim' });
  });

  it('treats a claim 201 as an unexpected status', async () => {
    stub.setHandler((_c, res) => replyJson(res, 201, claimBody));
    expect(asSandboxdHttpError(await caught(client.claim({ template: 't' })))?.statusCode).toBe(201);
  });

  it('releases with the sandbox token; 204 then 404 both succeed', async () => {
    let n = 0;
    stub.setHandler((_c, res) => {
      n++;
      if (n === 1) {
        res.writeHead(204);
        res.end();
      } else replyJson(res, 404, { error: 'unknown sandbox' });
    });
    await client.release('sb_abc', { token: 'sbtok' });
    await client.release('sb_abc', { token: 'sbtok' });
    expect(stub.calls).toHaveLength(2);
    expect(stub.calls[0]).toMatchObject({ method: 'POST', path: '/v1/sandboxes/sb_abc/release', authorization: 'Bearer sbtok' });
  });

  it('refuses a release answered 200', async () => {
    stub.setHandler((_c, res) => replyJson(res, 200, {}));
    expect(asSandboxdHttpError(await caught(client.release('sb_abc')))?.statusCode).toBe(200);
  });

  it('decodes info: pools, counts, peers; unknown fields ignored, null lists empty', async () => {
    stub.setHandler((_c, res) =>
      replyJson(res, 200, {
        pools: [{ key: { template: 'base:24.04', net: 'none', size: 'small' }, warm: 3, refilling: 1, target: 4 }],
        claimed: 2,
        hibernated: 1,
        archived: 0,
        peers: ['10.0.0.6:7777'],
        config_digest: 'x',
      }),
    );
    const info = await client.info();
    expect(info.pools).toEqual([
      { key: { template: 'base:24.04', net: 'none', size: 'small' }, warm: 3, refilling: 1, target: 4, golden: false },
    ]);
    expect(info).toMatchObject({ claimed: 2, hibernated: 1, archived: 0, draining: false, peers: ['10.0.0.6:7777'] });
    expect(stub.calls[0]).toMatchObject({ method: 'GET', path: '/v1/info', authorization: 'Bearer root-token' });
    stub.setHandler((_c, res) => replyJson(res, 200, { pools: null, claimed: 0, peers: null }));
    expect(await client.info()).toMatchObject({ pools: [], peers: [] });
  });

  it('reads a zero deadline as no deadline, and accepts a key with an engine field', async () => {
    stub.setHandler((_c, res) =>
      replyJson(res, 200, {
        sandboxes: [
          { id: 'sb_1', key: { template: 't', engine: 'ch' }, deadline: '0001-01-01T00:00:00Z', hibernated: false, archived: true },
        ],
      }),
    );
    const [row] = await client.sandboxes('ns/name');
    expect(row).toMatchObject({
      id: 'sb_1',
      deadline: null,
      archived: true,
      key: { template: 't', net: 'none', size: 'small', engine: 'ch' },
    });
    expect(stub.calls[0]?.path).toBe('/v1/sandboxes?claim_ref=ns%2Fname');
  });

  it('aborting a blocked claim rejects with the AbortError and frees the socket', async () => {
    const agent = createSandboxdAgent({ connectionsPerNode: 1 });
    const one = new SandboxdClient({ baseUrl: stub.url, dispatcher: agent });
    let arrived = (): void => undefined;
    const reached = new Promise<void>((r) => (arrived = r));
    stub.setHandler((call, res) => {
      if (JSON.parse(call.body).template === 'hang') return arrived(); // never answers
      replyJson(res, 200, claimBody);
    });
    const ac = new AbortController();
    const pending = one.claim({ template: 'hang' }, { signal: ac.signal });
    // abort once the node holds the request, so the abort frees a socket in use
    await reached;
    ac.abort();
    const err = await caught(pending);
    expect(isAbortError(err)).toBe(true);
    // With one socket per node, this only succeeds if the aborted request let go of it.
    await expect(one.claim({ template: 'ok' }, { signal: AbortSignal.timeout(5000) })).resolves.toMatchObject({ id: 'sb_abc' });
    await agent.close();
  });

  it('ends a blocked call at its shared deadline with the TimeoutError and frees the socket', async () => {
    const agent = createSandboxdAgent({ connectionsPerNode: 1 });
    const one = new SandboxdClient({ baseUrl: stub.url, dispatcher: agent });
    stub.setHandler((call, res) => {
      if (JSON.parse(call.body).template === 'hang') return; // never answers
      replyJson(res, 200, claimBody);
    });
    const deadlines = new DeadlineSignals();
    const err = await caught(one.claim({ template: 'hang' }, { deadline: deadlines.deadline(100) }));
    expect(isAbortError(err)).toBe(true);
    expect((err as Error).name).toBe('TimeoutError');
    // the next call in the same slice shares the deadline, which has fired: it starts a new one
    await expect(one.claim({ template: 'ok' }, { deadline: deadlines.deadline(100) })).resolves.toMatchObject({ id: 'sb_abc' });
    await agent.close();
  });

  it('with a caller signal and a deadline, ends at whichever fires first and leaves no listener behind', async () => {
    stub.setHandler((call, res) => {
      if (JSON.parse(call.body).template === 'hang') return;
      replyJson(res, 200, claimBody);
    });
    const deadlines = new DeadlineSignals();
    // the deadline first
    const caller = new AbortController();
    const late = deadlines.deadline(100);
    expect(((await caught(client.claim({ template: 'hang' }, { signal: caller.signal, deadline: late }))) as Error).name).toBe(
      'TimeoutError',
    );
    expect(caller.signal.aborted).toBe(false);
    // the caller first, under a deadline far away
    const far = deadlines.deadline(60_000);
    const ac = new AbortController();
    const pending = client.claim({ template: 'hang' }, { signal: ac.signal, deadline: far });
    ac.abort(new Error('caller went away'));
    expect(((await caught(pending)) as Error).message).toBe('caller went away');
    // an answered call lets go of both
    await expect(client.claim({ template: 'ok' }, { signal: caller.signal, deadline: far })).resolves.toMatchObject({ id: 'sb_abc' });
    expect(far.listenerCount('abort')).toBe(0);
  });

  it('refuses a success reply over 1 MiB and keeps working afterwards', async () => {
    stub.setHandler((call, res) => {
      if (call.path === '/v1/info') replyJson(res, 200, { pools: [], claimed: 0, pad: 'x'.repeat(2 << 20) });
      else replyJson(res, 200, { sandboxes: [] });
    });
    expect(isReplyTooLarge(await caught(client.info()))).toBe(true);
    await expect(client.sandboxes()).resolves.toEqual([]);
  });

  it('refuses an oversized reply sent without a content-length', async () => {
    stub.setHandler((_c, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = 'x'.repeat(64 * 1024);
      for (let i = 0; i < 20; i++) res.write(chunk);
      res.end();
    });
    expect(isReplyTooLarge(await caught(client.metrics()))).toBe(true);
  });

  it('reports an error body over 64 KiB with an empty message', async () => {
    stub.setHandler((_c, res) => replyJson(res, 500, { error: 'y'.repeat(100_000) }));
    expect(asSandboxdHttpError(await caught(client.info()))).toMatchObject({ statusCode: 500, message: '' });
  });

  it('turns invalid JSON and schema mismatches into MalformedReplyError', async () => {
    stub.setHandler((_c, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"id": ');
    });
    expect(isMalformedReply(await caught(client.claim({ template: 't' })))).toBe(true);
    stub.setHandler((_c, res) => replyJson(res, 200, { id: 'sb_1', token: 5, deadline: DEADLINE }));
    expect(isMalformedReply(await caught(client.claim({ template: 't' })))).toBe(true);
    stub.setHandler((_c, res) => replyJson(res, 200, { id: 'sb_1', token: 't', deadline: 'tomorrow' }));
    expect(isMalformedReply(await caught(client.claim({ template: 't' })))).toBe(true);
  });

  it('reuses one keep-alive connection across 100 claims', async () => {
    stub.setHandler((_c, res) => replyJson(res, 200, claimBody));
    for (let i = 0; i < 100; i++) await client.claim({ template: 't' });
    expect(stub.connections()).toBe(1);
  });

  it('opens a connection per call when keep-alive is off', async () => {
    const noKa = new SandboxdClient({ baseUrl: stub.url, keepAlive: false });
    stub.setHandler((_c, res) => replyJson(res, 200, claimBody));
    for (let i = 0; i < 5; i++) await noKa.claim({ template: 't' });
    await noKa.close();
    expect(stub.connections()).toBe(5);
    expect(stub.calls[0]?.connection).toBe('close');
  });

  it('refuses an empty id without sending anything', async () => {
    await expect(client.release('')).rejects.toThrow(/empty id/);
    await expect(client.sandbox('')).rejects.toThrow(/empty id/);
    expect(stub.calls).toHaveLength(0);
  });

  it('path-escapes ids', async () => {
    stub.setHandler((_c, res) => {
      res.writeHead(204);
      res.end();
    });
    await client.hibernate('a/b c');
    expect(stub.calls[0]?.path).toBe('/v1/sandboxes/a%2Fb%20c/hibernate');
  });

  it('sends no Authorization header for an empty token, and a per-call token over the client one', async () => {
    stub.setHandler((_c, res) => res.end('ok'));
    await client.healthz({ token: '' });
    await client.healthz({ token: 'other' });
    expect(stub.calls.map((c) => c.authorization)).toEqual([undefined, 'Bearer other']);
  });

  it('sends {} where the daemon decodes a body', async () => {
    stub.setHandler((_c, res) =>
      replyJson(res, 200, { checkpoint: { id: 'ck_1', sandbox_id: 'sb_1', key: { template: 't' }, created_at: DEADLINE } }),
    );
    await client.checkpoint('sb_1');
    expect(stub.calls[0]?.body).toBe('{}');
    stub.setHandler((_c, res) => replyJson(res, 200, { ...claimBody, from_checkpoint: 'ck_1' }));
    await client.claimCheckpoint('ck_1');
    expect(stub.calls[1]?.body).toBe('{}');
  });

  it('sends the complete pool list, [] when empty', async () => {
    stub.setHandler((_c, res) => replyJson(res, 200, { pools: [], claimed: 0 }));
    await client.setPools([]);
    await client.setPools([{ template: 't', warm: 0, warmMax: 4 }]);
    expect(stub.calls.map((c) => c.body)).toEqual(['{"pools":[]}', '{"pools":[{"template":"t","warm":0,"warm_max":4}]}']);
    expect(stub.calls[0]?.method).toBe('PUT');
  });

  it('carries Retry-After on a 503', async () => {
    stub.setHandler((_c, res) => {
      res.writeHead(503, { 'retry-after': '2', 'content-type': 'application/json' });
      res.end('{"error":"heal limit"}');
    });
    expect(asSandboxdHttpError(await caught(client.claimCheckpoint('ck_1')))).toMatchObject({ statusCode: 503, retryAfterSeconds: 2 });
  });

  it('reports a refused connection as a transport error without the token', async () => {
    const dead = new SandboxdClient({ baseUrl: '127.0.0.1:1', token: 'secret-token' });
    const err = await caught(dead.info());
    await dead.close();
    expect(isTransportError(err)).toBe(true);
    expect(String((err as Error).message)).not.toContain('secret-token');
  });
});

describe('claim redirect following', () => {
  let entry: StubNode;
  let peerA: StubNode;
  let peerB: StubNode;
  let set: SandboxdClientSet;

  beforeEach(async () => {
    [entry, peerA, peerB] = await Promise.all([startStubNode(), startStubNode(), startStubNode()]);
    set = new SandboxdClientSet({ token: 'root-token' });
  });
  afterEach(async () => {
    await set.close();
    await Promise.all([entry.close(), peerA.close(), peerB.close()]);
  });

  const hostOf = (url: string): string => url.replace('http://', '');

  it('retries once at the first peer with no_redirect, keeping require_promoted', async () => {
    entry.setHandler((_c, res) => replyJson(res, 200, { redirect: [hostOf(peerA.url), hostOf(peerB.url)], require_promoted: true }));
    peerA.setHandler((_c, res) => replyJson(res, 200, { ...claimBody, owner_addr: '' }));
    const c = await set.forNode(entry.url).claim({ template: 't', claimRef: 'ns/a' }, { followRedirects: true });
    expect(c).toMatchObject({ id: 'sb_abc', nodeUrl: peerA.url, ownerUrl: peerA.url });
    expect(JSON.parse(peerA.calls[0]?.body ?? '')).toEqual({ template: 't', claim_ref: 'ns/a', no_redirect: true, require_promoted: true });
    expect(peerB.calls).toHaveLength(0);
  });

  it('moves past a peer answering 401 and then asks the entry node to serve locally', async () => {
    entry.setHandler((call, res) => {
      if (JSON.parse(call.body).no_redirect) replyJson(res, 200, claimBody);
      else replyJson(res, 200, { redirect: [hostOf(peerA.url), hostOf(peerB.url)] });
    });
    peerA.setHandler((_c, res) => replyJson(res, 401, { error: 'invalid api token' }));
    peerB.setHandler((_c, res) => replyJson(res, 429, { error: 'node claim quota reached: node draining' }));
    const c = await set.forNode(entry.url).claim({ template: 't' }, { followRedirects: true });
    expect(c.nodeUrl).toBe(entry.url);
    expect([peerA.calls.length, peerB.calls.length, entry.calls.length]).toEqual([1, 1, 2]);
  });

  it('does not follow by default', async () => {
    entry.setHandler((_c, res) => replyJson(res, 200, { redirect: [hostOf(peerA.url)] }));
    expect(isNodeAtCapacity(await caught(set.forNode(entry.url).claim({ template: 't' })))).toBe(true);
    expect(peerA.calls).toHaveLength(0);
  });
});
