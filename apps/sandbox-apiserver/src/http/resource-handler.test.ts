import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger } from '@sandbox-scale/kube-runtime';
import { randomBytes } from 'node:crypto';
import { formatOwnerRef, OWNER_KINDS, OwnerRefKey, type NodeInventory } from '@sandbox-scale/scale-core';
import { LocalVerbs } from '../peers/sandbox-verbs';
import { installStorages } from '../storage/install';
import { negotiate } from './negotiate';
import { requestInfoOf } from './request-info';
import { handleResource, TABLE_PAGE_ROWS, WHOLE_LIST_PART } from './resource-handler';
import { sendStatus } from './status';

const G = '/apis/agents.x-k8s.io/v1beta1';
const TABLE = 'application/json;as=Table;g=meta.k8s.io;v=v1';
const METADATA = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';

/** Team-b's sandboxes, more than one part of a list served whole. */
const MANY = WHOLE_LIST_PART * 2 + 345;

function crowded(): NodeInventory {
  const entries = Array.from({ length: MANY }, (_, i) => ({
    name: `team-b/m${String(i).padStart(5, '0')}`,
    id: `sb_m${i}`,
    phase: 'Running',
  }));
  return {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'NodeInventory',
    metadata: { name: 'n2', resourceVersion: '6' },
    node: 'n2',
    address: '10.0.0.2:7777',
    entries,
  };
}

/** The key the control plane proves its claim references with: team-a's sandboxes are its own. */
const refKey = new OwnerRefKey(randomBytes(32));

function inventory(): NodeInventory {
  const entries = ['s1', 's2'].map((n, i) => ({
    name: `team-a/${n}`,
    id: `sb_${i}`,
    phase: 'Running',
    claimRef: formatOwnerRef({ kind: OWNER_KINDS.sandbox, uid: `uid-${n}`, namespace: 'team-a', name: n }, refKey),
  }));
  return {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'NodeInventory',
    metadata: { name: 'n1', resourceVersion: '5' },
    node: 'n1',
    address: '10.0.0.1:7777',
    entries,
  };
}

interface Reply {
  code: number;
  headers: IncomingMessage['headers'];
  body: {
    kind?: string;
    message?: string;
    items?: { metadata: { name: string } }[];
    rows?: { cells: unknown[]; object?: { kind: string; metadata: { name: string } } }[];
    metadata?: { name?: string; continue?: string; resourceVersion?: string; remainingItemCount?: number };
  };
  text: string;
}

// The handler over a real HTTP server and a real storage whose cache holds one node's inventory;
// no fleet token, so every verb that would reach a node is refused.
describe('handleResource', () => {
  let server: Server;
  const { sandboxes, byResource } = installStorages({
    clients: undefined,
    graceMs: 60_000,
    overlayTtlMs: 300_000,
    claimIndexMaxBytes: 1 << 20,
    watchHistory: 100,
    rng: Math.random,
    claimRefKey: refKey,
    log: createLogger({ name: 'test', level: 'silent' }),
  });

  beforeAll(async () => {
    sandboxes.routeThrough(new LocalVerbs(sandboxes));
    sandboxes.cache.upsertInventory(inventory());
    sandboxes.cache.upsertInventory(crowded());
    sandboxes.markSynced('6');
    server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const info = requestInfoOf(req.method ?? 'GET', url);
      const storage = info.isResource ? byResource.get(info.resource) : undefined;
      const shape = negotiate(req.headers.accept);
      if (!info.isResource || storage === undefined || shape === undefined) {
        res.writeHead(404).end();
        return;
      }
      handleResource({ req, res, url, info, shape, storage, bookmarkIntervalMs: 60_000 }).catch((err: unknown) => sendStatus(res, err));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });

  afterAll(async () => {
    sandboxes.stop();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  function call(method: string, path: string, opts: { accept?: string; contentType?: string; body?: unknown } = {}): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const headers: Record<string, string> = {};
      if (opts.accept) headers['Accept'] = opts.accept;
      if (opts.contentType) headers['Content-Type'] = opts.contentType;
      const req = request({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, method, path, headers }, (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () =>
          resolve({ code: res.statusCode ?? 0, headers: res.headers, text, body: text === '' ? {} : (JSON.parse(text) as Reply['body']) }),
        );
      });
      req.on('error', reject);
      req.end(opts.body === undefined ? undefined : JSON.stringify(opts.body));
    });
  }

  it('serves a list and one object in the shape Accept asks for', async () => {
    const list = await call('GET', `${G}/namespaces/team-a/sandboxes`);
    expect(list).toMatchObject({ code: 200, body: { kind: 'SandboxList' } });
    expect(list.body.items).toHaveLength(2);
    const table = await call('GET', `${G}/namespaces/team-a/sandboxes`, { accept: TABLE });
    expect(table).toMatchObject({ code: 200, body: { kind: 'Table' } });
    expect(table.body.rows).toHaveLength(2);
    expect(await call('GET', `${G}/namespaces/team-a/sandboxes/s1`)).toMatchObject({
      code: 200,
      body: { kind: 'Sandbox', metadata: { name: 's1' } },
    });
    expect(await call('GET', `${G}/namespaces/team-a/sandboxes/s1`, { accept: METADATA })).toMatchObject({
      code: 200,
      body: { kind: 'PartialObjectMetadata', metadata: { name: 's1' } },
    });
    expect((await call('GET', `${G}/namespaces/team-a/sandboxes/s1`, { accept: TABLE })).body.rows).toHaveLength(1);
  });

  it('answers what it does not serve with the Status kube-apiserver would', async () => {
    expect(await call('GET', `${G}/namespaces/team-a/sandboxes/nope`)).toMatchObject({ code: 404, body: { kind: 'Status' } });
    expect(await call('PUT', `${G}/namespaces/team-a/sandboxes/s1`, { body: {} })).toMatchObject({
      code: 405,
      body: { message: 'PUT is not supported on sandboxes (served verbs: get, list, watch, create, patch, delete)' },
    });
    expect(await call('GET', `${G}/namespaces/team-a/sandboxes/s1/pause`)).toMatchObject({
      code: 405,
      body: { message: 'GET is not supported on sandboxes/pause' },
    });
    expect(await call('POST', `${G}/namespaces/team-a/sandboxes/s1/teleport`, { body: {} })).toMatchObject({ code: 404 });
    expect(await call('POST', `${G}/sandboxes`, { body: {} })).toMatchObject({
      code: 405,
      body: { message: 'create requires a namespace: POST /apis/agents.x-k8s.io/v1beta1/namespaces/{namespace}/sandboxes' },
    });
  });

  it('parses the request before the storage acts: bad query values, unknown fields and patch types are 400 and 415', async () => {
    expect(await call('GET', `${G}/namespaces/team-a/sandboxes?limit=-1`)).toMatchObject({ code: 400 });
    expect(await call('GET', `${G}/namespaces/team-a/sandboxes?fieldSelector=spec.secret%3Dx`)).toMatchObject({ code: 400 });
    expect(await call('DELETE', `${G}/namespaces/team-a/sandboxes/s1?dryRun=Some`)).toMatchObject({
      code: 400,
      body: { message: 'unsupported dryRun value "Some": only All is supported' },
    });
    const strict = await call('POST', `${G}/namespaces/team-a/sandboxes?fieldValidation=Strict`, {
      body: { apiVersion: 'agents.x-k8s.io/v1beta1', kind: 'Sandbox', metadata: { name: 'new' }, spec: { bogus: 1 } },
    });
    expect(strict).toMatchObject({ code: 400, body: { message: 'strict decoding error: unknown field "spec.bogus"' } });
    expect(await call('PATCH', `${G}/namespaces/team-a/sandboxes/s1`, { contentType: 'text/yaml', body: {} })).toMatchObject({ code: 415 });
    // an apply that names no field manager
    expect(
      await call('PATCH', `${G}/namespaces/team-a/sandboxes/s1`, { contentType: 'application/apply-patch+yaml', body: {} }),
    ).toMatchObject({ code: 400 });
  });

  it('refuses every verb that would reach a node when it has no fleet token, and a dry run of delete releases nothing', async () => {
    expect(await call('DELETE', `${G}/namespaces/team-a/sandboxes/s1`)).toMatchObject({ code: 500, body: { kind: 'Status' } });
    expect(await call('DELETE', `${G}/namespaces/team-a/sandboxes/s1?dryRun=All`)).toMatchObject({
      code: 200,
      body: { kind: 'Sandbox', metadata: { name: 's1' } },
    });
    expect((await call('GET', `${G}/namespaces/team-a/sandboxes/s1`)).code).toBe(200);
  });

  it('serves a Table page of at least TABLE_PAGE_ROWS rows whatever its limit, and pages lists of objects at the limit the client asks', async () => {
    const table = await call('GET', `${G}/namespaces/team-b/sandboxes?limit=500`, { accept: TABLE });
    expect(table.code).toBe(200);
    expect(table.body.metadata).toEqual({ resourceVersion: String(sandboxes.revision) });
    expect(table.body.rows?.map((r) => r.cells[0])).toEqual(Array.from({ length: MANY }, (_, i) => `m${String(i).padStart(5, '0')}`));
    expect(table.body.rows?.[MANY - 1]?.object).toMatchObject({
      kind: 'PartialObjectMetadata',
      metadata: { name: `m${String(MANY - 1).padStart(5, '0')}` },
    });
    // every part shares one clock: the same Age on every row
    expect(new Set(table.body.rows?.map((r) => r.cells[4])).size).toBe(1);

    const page = await call('GET', `${G}/namespaces/team-b/sandboxes?limit=500`);
    expect(page.body.items).toHaveLength(500);
    expect(page.body.metadata).toMatchObject({ resourceVersion: String(sandboxes.revision), remainingItemCount: MANY - 500 });
    expect(page.body.metadata?.continue).toEqual(expect.any(String));
    const meta = await call('GET', `${G}/namespaces/team-b/sandboxes?limit=500`, { accept: METADATA });
    expect(meta.body.items).toHaveLength(500);
    expect(meta.body.metadata?.continue).toEqual(expect.any(String));
  });

  it('streams a list without a limit in parts, byte for byte the list its pages make, from a continue token on', async () => {
    const whole = await call('GET', `${G}/sandboxes`);
    expect(whole.headers['content-length']).toBeUndefined();
    const names: string[] = [];
    let cont = '';
    do {
      const page = await call('GET', `${G}/sandboxes?limit=700${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`);
      names.push(...(page.body.items ?? []).map((s) => s.metadata.name));
      cont = page.body.metadata?.continue ?? '';
    } while (cont !== '');
    expect(names).toHaveLength(MANY + 2);
    expect(whole.body.items?.map((s) => s.metadata.name)).toEqual(names);
    expect(whole.text).toBe(JSON.stringify(whole.body));
    expect(whole.body.metadata).toEqual({ resourceVersion: String(sandboxes.revision) });

    // a whole Table from the second page of a paged list holds the rest of it
    const first = await call('GET', `${G}/sandboxes?limit=700`);
    const rest = await call('GET', `${G}/sandboxes?continue=${encodeURIComponent(first.body.metadata?.continue ?? '')}`, { accept: TABLE });
    expect(rest.body.rows?.map((r) => r.cells[0])).toEqual(names.slice(700));
    expect(await call('GET', `${G}/sandboxes?continue=bogus`, { accept: TABLE })).toMatchObject({ code: 400, body: { kind: 'Status' } });
  });

  // last: its namespace stays in the cache for the rest of the file; it builds 26,500 objects,
  // so its jest timeout is a bound for a loaded machine, not a timing assertion
  it('pages a Table of more than TABLE_PAGE_ROWS rows at that size, every row exactly once', async () => {
    const total = TABLE_PAGE_ROWS + 1500;
    sandboxes.cache.upsertInventory({
      apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
      kind: 'NodeInventory',
      metadata: { name: 'n3', resourceVersion: '7' },
      node: 'n3',
      address: '10.0.0.3:7777',
      entries: Array.from({ length: total }, (_, i) => ({
        name: `team-z/z${String(i).padStart(6, '0')}`,
        id: `sb_z${i}`,
        phase: 'Running',
      })),
    });
    const first = await call('GET', `${G}/namespaces/team-z/sandboxes?limit=500`, { accept: TABLE });
    expect(first.body.rows).toHaveLength(TABLE_PAGE_ROWS);
    expect(first.body.metadata?.continue).toEqual(expect.any(String));
    const rest = await call(
      'GET',
      `${G}/namespaces/team-z/sandboxes?limit=500&continue=${encodeURIComponent(first.body.metadata?.continue ?? '')}`,
      {
        accept: TABLE,
      },
    );
    expect(rest.body.rows).toHaveLength(1500);
    expect(rest.body.metadata?.continue).toBeUndefined();
    const names = [...(first.body.rows ?? []), ...(rest.body.rows ?? [])].map((r) => r.cells[0]);
    expect(names).toEqual(Array.from({ length: total }, (_, i) => `z${String(i).padStart(6, '0')}`));
  }, 60_000);
});
