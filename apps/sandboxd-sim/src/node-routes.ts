import { nodeCaller, rootCaller, visibleTo } from './auth';
import { jsonReply, noContent, type Reply } from './http-io';
import { deleteCheckpoint, deleteTemplate } from './lifecycle-ops';
import { decodePoolsBody, drain, setPools, undrain } from './pools-ops';
import type { Verb } from './faults';
import type { Route, RouteCtx } from './route';
import { checkpointWire, infoReply, metricsText, sandboxRow } from './views';

/** Node-level routes: listings, info, pools, drain, metrics, health. Handlers translate only. */

const info = (c: { node: Parameters<typeof infoReply>[0] }): Reply => jsonReply(infoReply(c.node));

/** A root-only route that changes the node's pools or drain state and answers the node's info after. */
const rootChange = (method: string, path: string, verb: Verb, change: (c: RouteCtx) => void): Route => ({
  method,
  path,
  verb,
  handle: (c) => {
    rootCaller(c.node, c.bearer);
    change(c);
    return info(c);
  },
});

export const nodeRoutes: Route[] = [
  {
    method: 'GET',
    path: '/v1/sandboxes',
    verb: 'sandboxes',
    handle: (c) => {
      const caller = nodeCaller(c.node, c.bearer);
      const ref = c.query.get('claim_ref') ?? '';
      const rows = [...c.node.sandboxes.values()]
        .filter((sb) => visibleTo(caller, sb.tenant) && (ref === '' || sb.claimRef === ref))
        .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
        .map((sb) => sandboxRow(c.node, sb));
      return jsonReply({ sandboxes: rows });
    },
  },
  {
    method: 'GET',
    path: '/v1/checkpoints',
    verb: 'checkpoints',
    handle: (c) => {
      const caller = nodeCaller(c.node, c.bearer);
      const tenant = caller.kind === 'tenant' ? caller.tenant.name : undefined;
      const list = c.node.lineage.listCheckpoints(tenant, caller.kind !== 'tenant');
      return jsonReply({ checkpoints: list.map((rec) => checkpointWire(c.node, rec)) });
    },
  },
  {
    method: 'DELETE',
    path: '/v1/checkpoints/:id',
    verb: 'delete_checkpoint',
    handle: (c) => {
      deleteCheckpoint(c.node, nodeCaller(c.node, c.bearer), c.id);
      return noContent();
    },
  },
  {
    method: 'DELETE',
    path: '/v1/templates',
    verb: 'delete_template',
    handle: (c) => {
      const caller = nodeCaller(c.node, c.bearer);
      const key = c.node.keys.parse(c.query.get('template'), c.query.get('net'), c.query.get('size'));
      const noRedirect = ['1', 'true'].includes(c.query.get('no_redirect') ?? '');
      const out = deleteTemplate(c.node, caller, key, noRedirect);
      return out.kind === 'deleted' ? noContent() : jsonReply({ redirect: out.to });
    },
  },
  {
    method: 'HEAD',
    path: '/v1/checkpoints/:id/blob',
    handle: (c) => ({ status: c.node.lineage.checkpoints.has(c.id) ? 200 : 404 }),
  },
  {
    method: 'GET',
    path: '/v1/checkpoints/:id/blob',
    handle: (c) => {
      rootCaller(c.node, c.bearer);
      const rec = c.node.lineage.checkpoints.get(c.id);
      if (rec === undefined) return jsonReply({ error: 'unknown checkpoint' }, 404);
      // The simulator holds no memory image; the record stands in for the tar stream.
      return { status: 200, text: JSON.stringify(checkpointWire(c.node, rec)), contentType: 'application/x-tar' };
    },
  },
  {
    method: 'GET',
    path: '/v1/info',
    verb: 'info',
    handle: (c) => {
      rootCaller(c.node, c.bearer);
      return info(c);
    },
  },
  {
    method: 'GET',
    path: '/v1/peers',
    verb: 'peers',
    handle: (c) => {
      nodeCaller(c.node, c.bearer);
      const peers = c.node.mesh?.peerAddrs() ?? [];
      // A single node answers null, as the daemon's nil slice does.
      return jsonReply({ peers: peers.length > 0 ? peers : null });
    },
  },
  rootChange('PUT', '/v1/pools', 'pools', (c) => setPools(c.node, decodePoolsBody(c.text()))),
  rootChange('POST', '/v1/drain', 'drain', (c) => drain(c.node)),
  rootChange('DELETE', '/v1/drain', 'drain', (c) => undrain(c.node)),
  {
    method: 'GET',
    path: '/metrics',
    verb: 'metrics',
    handle: (c) => {
      rootCaller(c.node, c.bearer);
      return { status: 200, text: metricsText(c.node), contentType: 'text/plain; version=0.0.4' };
    },
  },
  {
    method: 'GET',
    path: '/healthz',
    handle: () => ({ status: 200, text: 'ok' }),
  },
];
