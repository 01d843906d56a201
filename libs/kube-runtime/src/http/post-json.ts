import { request, type Agent } from 'node:https';
import { socketReleased } from './socket-released';

/** What a peer answered: its status and body text (bounded). */
export interface JsonReply {
  readonly code: number;
  readonly text: string;
}

export interface PostJsonOptions {
  /** The kept-alive agent that pins the peer's CA and name. */
  readonly agent: Agent;
  /** The `Authorization` header value (a bearer token); never logged. */
  readonly authorization: string;
  readonly timeoutMs: number;
  /** A reply body past this many bytes ends the call with `fail('too-large')`. */
  readonly maxReplyBytes: number;
  /** The error a call ends with: no answer in time, a reply past the cap, or a transport failure. */
  readonly fail: (why: 'timeout' | 'too-large' | 'transport', cause?: Error) => Error;
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
          done(o.fail('too-large'));
          req.destroy();
        });
        res.on('end', () => {
          const reply = { code: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') };
          // the next call should find this socket free, not open another
          void released.then(() => done(reply));
        });
        res.on('error', (err) => done(o.fail('transport', err)));
      },
    );
    const released = socketReleased(req);
    req.on('timeout', () => {
      done(o.fail('timeout'));
      req.destroy();
    });
    req.on('error', (err) => done(o.fail('transport', err)));
    req.end(text);
  });
}
