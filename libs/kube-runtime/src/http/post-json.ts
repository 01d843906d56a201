import { request, type Agent } from 'node:https';
import { socketReleased } from './socket-released';

/** What a peer answered: its status and body text (bounded). */
export interface JsonReply {
  readonly code: number;
  readonly text: string;
}

/** Why a call ended without a reply, with the message that says so (naming the peer). */
export interface PostFailure {
  readonly why: 'timeout' | 'too-large' | 'transport';
  /** e.g. "peer 10.0.0.7:8443 did not answer within 2000 ms" */
  readonly message: string;
  readonly cause?: Error;
}

export interface PostJsonOptions {
  /** The kept-alive agent that pins the peer's CA and name. */
  readonly agent: Agent;
  /** The `Authorization` header value (a bearer token); never logged. */
  readonly authorization: string;
  readonly timeoutMs: number;
  /** A reply body past this many bytes ends the call with a 'too-large' failure. */
  readonly maxReplyBytes: number;
  /** What the peer is called in failure messages, e.g. "peer 10.0.0.7:8443". */
  readonly peer: string;
  /** The caller's own error for a call that got no usable reply: no answer in time, a reply past the cap, a transport failure. */
  readonly fail: (failure: PostFailure) => Error;
}

/**
 * One JSON POST to a replica of ours over HTTPS (peer calls between sandbox-apiserver replicas,
 * node notices from the publisher): the body sent with its length, the reply read up to a cap,
 * every failure turned into the caller's own error type.
 */
export function postJson(url: string, body: unknown, o: PostJsonOptions): Promise<JsonReply> {
  const text = JSON.stringify(body);
  return new Promise<JsonReply>((resolve, reject) => {
    // the first outcome wins; what the sockets report after it (a reset after a destroy) is moot
    let settled = false;
    const transport = (cause: Error): Error => o.fail({ why: 'transport', message: `${o.peer}: ${cause.message}`, cause });
    const done = (outcome: JsonReply | Error): void => {
      if (settled) return;
      settled = true;
      if (outcome instanceof Error) reject(outcome);
      else resolve(outcome);
    };
    const req = request(
      url,
      {
        method: 'POST',
        agent: o.agent,
        headers: {
          Authorization: o.authorization,
          'Content-Type': 'application/json',
          Accept: 'application/json',
          'Content-Length': Buffer.byteLength(text),
        },
        timeout: o.timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size <= o.maxReplyBytes) {
            chunks.push(c);
            return;
          }
          done(o.fail({ why: 'too-large', message: `${o.peer} answered more than ${o.maxReplyBytes} bytes` }));
          req.destroy();
        });
        res.on('end', () => {
          const reply = { code: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') };
          // the next call should find this socket free, not open another
          void released.then(() => done(reply));
        });
        res.on('error', (err) => done(transport(err)));
      },
    );
    const released = socketReleased(req);
    req.on('timeout', () => {
      done(o.fail({ why: 'timeout', message: `${o.peer} did not answer within ${o.timeoutMs} ms` }));
      req.destroy();
    });
    req.on('error', (err) => done(transport(err)));
    req.end(text);
  });
}
