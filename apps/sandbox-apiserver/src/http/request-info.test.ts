import type { IncomingMessage } from 'node:http';
import { statusForError } from '@sandbox-scale/scale-core';
import { Registry } from 'prom-client';
import { requestMetrics } from '../metrics';
import { parseListQuery } from './list-query';
import { requestInfoOf } from './request-info';

const G = '/apis/agents.x-k8s.io/v1beta1';
const info = (method: string, path: string) => requestInfoOf(method, new URL(`https://localhost${path}`));

describe('requestInfoOf', () => {
  it('answers malformed percent-encoding in the path with a 400 Status', () => {
    let thrown: unknown;
    try {
      info('GET', `${G}/%zz`);
    } catch (err) {
      thrown = err;
    }
    expect(statusForError(thrown)).toMatchObject({ code: 400, reason: 'BadRequest' });
    expect(() => info('GET', `${G}/namespaces/a/sandboxes/%E0%A4%A`)).toThrow(/percent-encoding/);
  });

  it('names the same object for authorization and for the handler in a namespace named sandboxes', () => {
    const i = info('DELETE', `${G}/namespaces/sandboxes/sandboxes/victim`);
    expect(i).toMatchObject({
      isResource: true,
      namespace: 'sandboxes',
      resource: 'sandboxes',
      name: 'victim',
      pathName: 'victim',
      verb: 'delete',
    });
    const list = info('GET', `${G}/namespaces/sandboxes/sandboxes`);
    expect(list).toMatchObject({ namespace: 'sandboxes', name: '', pathName: '', verb: 'list' });
    const action = info('POST', `${G}/namespaces/sandboxes/sandboxes/sandboxes/fork`);
    expect(action).toMatchObject({ namespace: 'sandboxes', name: 'sandboxes', pathName: 'sandboxes', subresource: 'fork' });
  });

  it('maps methods to the verbs authorization speaks, for a collection and for one object', () => {
    const verb = (method: string, path: string): string => info(method, path).verb;
    expect(verb('GET', `${G}/namespaces/a/sandboxes`)).toBe('list');
    expect(verb('HEAD', `${G}/namespaces/a/sandboxes`)).toBe('list');
    expect(verb('GET', `${G}/namespaces/a/sandboxes?watch=true`)).toBe('watch');
    expect(verb('GET', `${G}/namespaces/a/sandboxes?watch=1`)).toBe('watch');
    expect(verb('GET', `${G}/namespaces/a/sandboxes?watch=True`)).toBe('watch');
    expect(verb('GET', `${G}/namespaces/a/sandboxes?watch=false`)).toBe('list');
    expect(verb('GET', `${G}/namespaces/a/sandboxes?watch=yes`)).toBe('list');
    expect(verb('GET', `${G}/namespaces/a/sandboxes/s1`)).toBe('get');
    expect(verb('POST', `${G}/namespaces/a/sandboxes`)).toBe('create');
    expect(verb('PUT', `${G}/namespaces/a/sandboxes/s1`)).toBe('update');
    expect(verb('PATCH', `${G}/namespaces/a/sandboxes/s1`)).toBe('patch');
    expect(verb('DELETE', `${G}/namespaces/a/sandboxes/s1`)).toBe('delete');
    expect(verb('DELETE', `${G}/namespaces/a/sandboxes`)).toBe('deletecollection');
    expect(verb('OPTIONS', `${G}/namespaces/a/sandboxes`)).toBe('options');
  });

  it('authorizes the data-plane subresources by what they do: exec, a file write and a port-forward (GET too) are create', () => {
    const verb = (method: string, path: string): string => info(method, path).verb;
    const s = `${G}/namespaces/a/sandboxes/s1`;
    expect(verb('POST', `${s}/exec`)).toBe('create');
    expect(verb('GET', `${s}/files?path=/work/x`)).toBe('get');
    expect(verb('GET', `${s}/files?path=/work&watch=true`)).toBe('get');
    expect(verb('PUT', `${s}/files?path=/work/x`)).toBe('create');
    expect(verb('DELETE', `${s}/files?path=/work/x`)).toBe('delete');
    expect(verb('GET', `${s}/portforward?port=80`)).toBe('create');
    expect(verb('POST', `${s}/portforward?port=80`)).toBe('create');
    // a method a subresource does not serve keeps its plain verb (and is answered 405)
    expect(verb('PATCH', `${s}/files?path=/x`)).toBe('patch');
    expect(verb('PUT', `${s}/exec`)).toBe('update');
  });

  it('authorizes a GET of the read subresources (stats, snapshots) as get whatever the query, and their POST as create', () => {
    const verb = (method: string, path: string): string => info(method, path).verb;
    const s = `${G}/namespaces/a/sandboxes/s1`;
    for (const sub of ['stats', 'snapshots']) {
      expect(info('GET', `${s}/${sub}`)).toMatchObject({ verb: 'get', name: 's1', pathName: 's1', subresource: sub });
      expect(verb('GET', `${s}/${sub}?watch=true`)).toBe('get');
      expect(verb('GET', `${s}/${sub}?dryRun=All&snapshot=x`)).toBe('get');
      expect(verb('POST', `${s}/${sub}`)).toBe('create');
      expect(verb('DELETE', `${s}/${sub}`)).toBe('delete');
    }
    // an action that acts keeps its plain verbs (its GET is answered 405)
    expect(verb('POST', `${s}/pause`)).toBe('create');
    expect(verb('GET', `${s}/pause`)).toBe('get');
  });

  it('reads a path without a namespace as cluster scope, and anything else as a non-resource path', () => {
    expect(info('GET', `${G}/sandboxes`)).toMatchObject({ isResource: true, namespace: '', resource: 'sandboxes', verb: 'list' });
    expect(info('GET', `${G}/namespaces/a`)).toMatchObject({ isResource: true, namespace: '', resource: 'namespaces', pathName: 'a' });
    for (const path of [
      G,
      `${G}/`,
      '/apis',
      '/openapi/v2',
      '/healthz',
      `${G}/namespaces/a/sandboxes/s1/fork/extra`,
      '/apis/other.io/v1/namespaces/a/sandboxes',
    ]) {
      expect(info('GET', path)).toEqual({ isResource: false, path: new URL(`https://localhost${path}`).pathname, verb: 'get' });
    }
  });

  it('keeps a field selector name for authorization only, never as the name acted on', () => {
    expect(info('GET', `${G}/namespaces/a/sandboxes?fieldSelector=metadata.name%3Dx`)).toMatchObject({
      name: 'x',
      pathName: '',
      verb: 'list',
    });
  });
});

describe('requestMetrics', () => {
  it('labels a request whose path cannot be decoded instead of throwing', async () => {
    const registry = new Registry();
    const metrics = requestMetrics(registry);
    for (const url of [`${G}/%zz`, 'http://[zz/', '*']) {
      const end = metrics.start({ method: 'GET', url } as IncomingMessage);
      end(400);
    }
    metrics.start({ method: 'BREW', url: `${G}/sandboxes` } as IncomingMessage)(405);
    const text = await registry.metrics();
    expect(text).toContain('sandbox_scale_apiserver_requests_total{verb="invalid",resource="invalid",code="400"} 3');
    expect(text).toContain('verb="other",resource="sandboxes",code="405"');
  });
});

describe('the list query of a watch', () => {
  it('accepts resourceVersionMatch without a resourceVersion for a watch in any spelling kube accepts, and refuses it for a list', () => {
    const q = (watch: string) => new URLSearchParams({ watch, resourceVersionMatch: 'NotOlderThan', sendInitialEvents: 'true' });
    for (const w of ['true', '1', 't']) expect(() => parseListQuery('', q(w))).not.toThrow();
    expect(() => parseListQuery('', q('false'))).toThrow(/resourceVersionMatch is forbidden unless resourceVersion is provided/);
  });
});
