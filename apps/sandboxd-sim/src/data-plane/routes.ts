import { AGENT_UPGRADE_PROTOCOL, PORT_UPGRADE_PROTOCOL } from '@sandbox-scale/sandboxd-client';
import { errorReply } from '../http-io';
import type { Route, RouteCtx } from '../route';
import { dataPlaneOf } from './access';
import { execRoutes } from './exec-route';

/**
 * The relays reached without an upgrade: 426, and nothing is looked up or woken (a plain GET,
 * from a health checker or a browser, must not bring a hibernated sandbox back).
 */
const upgradeRequired =
  (protocol: string) =>
  (c: RouteCtx): ReturnType<Route['handle']> => {
    dataPlaneOf(c.node);
    return errorReply(426, `upgrade required: send Connection: Upgrade and Upgrade: ${protocol}`, {
      connection: 'Upgrade',
      upgrade: protocol,
    });
  };

export const dataPlaneRoutes: Route[] = [
  ...execRoutes,
  { method: 'GET', path: '/v1/sandboxes/:id/agent', verb: 'agent', handle: upgradeRequired(AGENT_UPGRADE_PROTOCOL) },
  { method: 'GET', path: '/v1/sandboxes/:id/ports/:port', verb: 'ports', handle: upgradeRequired(PORT_UPGRADE_PROTOCOL) },
];
