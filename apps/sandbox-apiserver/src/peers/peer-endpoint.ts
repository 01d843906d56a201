import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson, type Logger } from '@sandbox-scale/kube-runtime';
import { BadRequestError, issuesText, StatusError } from '@sandbox-scale/scale-core';
import { readBody } from '../http/body';
import { PeerCallSchema } from './peer-protocol';
import type { LocalVerbs } from './sandbox-verbs';

/** Serves POST PEER_PATH: runs a peer's call on this replica's storage, answers `{object}` or a Status. */
export async function servePeerCall(req: IncomingMessage, res: ServerResponse, local: LocalVerbs, log: Logger): Promise<void> {
  if (req.method !== 'POST') throw new StatusError('MethodNotAllowed', `${req.method ?? ''} is not supported on the peer endpoint`);
  const parsed = PeerCallSchema.safeParse(await readBody(req));
  if (!parsed.success) throw new BadRequestError(`not a peer call: ${issuesText(parsed.error)}`);
  const call = parsed.data;
  log.debug({ op: call.op, namespace: call.namespace }, 'serving a peer call');
  sendJson(res, 200, { object: await local.run(call) });
}
