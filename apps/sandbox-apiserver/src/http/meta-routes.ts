import type { IncomingMessage, ServerResponse } from 'node:http';
import { API_VERSION, SANDBOX_GROUP, StatusError } from '@sandbox-scale/scale-core';
import { apiGroup, apiGroupDiscoveryList, apiGroupList, apiResourceList, etagOf } from '../discovery';
import { openApiV2, openApiV3, openApiV3Root, V3_GV_PATH } from '../openapi/openapi';
import type { ResponseShape } from './negotiate';
import { sendJson } from '@sandbox-scale/kube-runtime';

interface StaticDoc {
  readonly body: unknown;
  readonly etag: string;
  readonly contentType?: string;
}

const doc = (body: unknown, contentType?: string): StaticDoc => ({ body, etag: etagOf(body), ...(contentType ? { contentType } : {}) });

/** Discovery, OpenAPI and version documents: static, served before any cache is warm. */
export class MetaRoutes {
  readonly #docs = new Map<string, StaticDoc>();
  readonly #v2: Record<'v2' | 'v2beta1', StaticDoc>;

  constructor() {
    const v3 = openApiV3();
    this.#docs.set('/apis', doc(apiGroupList()));
    this.#docs.set(`/apis/${SANDBOX_GROUP}`, doc(apiGroup()));
    this.#docs.set(`/apis/${SANDBOX_GROUP}/${API_VERSION}`, doc(apiResourceList()));
    this.#docs.set('/openapi/v2', doc(openApiV2()));
    this.#docs.set('/openapi/v3', doc(openApiV3Root(v3)));
    this.#docs.set(`/openapi/v3/${V3_GV_PATH}`, doc(v3));
    this.#docs.set(
      '/version',
      doc({
        major: '1',
        minor: '0',
        gitVersion: 'v0.1.0-sandbox-scale',
        gitCommit: '',
        gitTreeState: 'clean',
        buildDate: '',
        goVersion: '',
        compiler: 'node',
        platform: `${process.platform}/${process.arch}`,
      }),
    );
    this.#v2 = { v2: doc(apiGroupDiscoveryList('v2')), v2beta1: doc(apiGroupDiscoveryList('v2beta1')) };
  }

  has(path: string): boolean {
    return this.#docs.has(path.replace(/\/+$/, '') || '/');
  }

  serve(req: IncomingMessage, res: ServerResponse, path: string, shape: ResponseShape): void {
    if (req.method !== 'GET' && req.method !== 'HEAD') throw new StatusError('MethodNotAllowed', `${req.method} is not allowed on ${path}`);
    const p = path.replace(/\/+$/, '');
    const d =
      p === '/apis' && shape.kind === 'discovery-v2'
        ? { ...this.#v2[shape.version], contentType: `application/json;g=apidiscovery.k8s.io;v=${shape.version};as=APIGroupDiscoveryList` }
        : this.#docs.get(p);
    if (d === undefined) throw new StatusError('NotFound', 'the server could not find the requested resource');
    const headers: Record<string, string> = {
      ETag: d.etag,
      Vary: 'Accept',
      'Cache-Control': p.startsWith('/openapi/v3/') ? 'public, immutable' : 'no-cache, private',
    };
    if (req.headers['if-none-match'] === d.etag) {
      res.writeHead(304, headers);
      res.end();
      return;
    }
    if (d.contentType) headers['Content-Type'] = d.contentType;
    sendJson(res, 200, d.body, headers);
  }
}
