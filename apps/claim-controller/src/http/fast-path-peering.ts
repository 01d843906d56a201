import { readFileSync } from 'node:fs';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  ConfigError,
  DelegatedAuth,
  PeerClient,
  peerId,
  PeerIdentity,
  PeerSet,
  podNamespace,
  startPeerInformer,
  followCaFile,
  type Logger,
} from '@sandbox-scale/kube-runtime';
import type { ClaimControllerFlags } from '../config';
import type { FastPathClaimsDeps, PeerCallOutcome } from './fast-path-claims';
import { FAST_PATH_PEER_PATH, type FastPathPeerCall } from './fast-path-peers';

export interface FastPathPeering {
  peers: NonNullable<FastPathClaimsDeps['peers']>;
  identity: PeerIdentity;
  stop(): Promise<void>;
}

type PeeringFlags = Pick<
  ClaimControllerFlags,
  | 'fastPathAdvertiseAddress'
  | 'fastPathService'
  | 'fastPathServiceNamespace'
  | 'fastPathPeerCaFile'
  | 'tlsCertFile'
  | 'fastPathMaxTokenReviewsInFlight'
>;

/**
 * The replicas of the fast path, as the EndpointSlices of its Service list them, and how they
 * call each other; undefined without --fast-path-advertise-address and --fast-path-service
 * (this replica serves every namespace). `port` is the fast path's own, which the Service's
 * `https` port targets.
 */
export function startFastPathPeering(
  kc: KubeConfig,
  flags: PeeringFlags,
  o: {
    port: number;
    /** After the replicas change, how long deliveries also reserve on the others. */
    settleMs: number;
    log: Logger;
    onCall?: (op: FastPathPeerCall['op'], outcome: PeerCallOutcome) => void;
  },
): FastPathPeering | undefined {
  const { port, settleMs, log, onCall } = o;
  if (flags.fastPathAdvertiseAddress === '' || flags.fastPathService === '') {
    log.info({}, 'no --fast-path-advertise-address or --fast-path-service: this replica serves the fast path of every namespace itself');
    return undefined;
  }
  if (port === 0) throw new ConfigError('--fast-path-bind-address needs a fixed port when --fast-path-advertise-address is set');
  const caFile = flags.fastPathPeerCaFile || flags.tlsCertFile;
  if (caFile === '')
    throw new ConfigError(
      '--fast-path-advertise-address needs --fast-path-peer-ca-file or --tls-cert-file: replicas check each other by it',
    );
  const namespace = flags.fastPathServiceNamespace || podNamespace();
  const set = new PeerSet(peerId(flags.fastPathAdvertiseAddress, port));
  const client = new PeerClient<FastPathPeerCall>({
    kubeConfig: kc,
    caPem: readFileSync(caFile, 'utf8'),
    serverName: `${flags.fastPathService}.${namespace}.svc`,
    path: FAST_PATH_PEER_PATH,
    // a forwarded claim is a node claim (warm: milliseconds; cold: the node's boot, bounded by it)
    timeoutMs: 150_000,
  });
  // a CA rotation reaches the file (a mounted Secret) first with both CAs, then with the new alone
  followCaFile(caFile, log, (pem) => client.trust(pem));
  // a replica's own ServiceAccount token is issued for the API server, not the fast path's audiences
  const identity = new PeerIdentity(
    kc,
    new DelegatedAuth(kc, { maxTokenReviewsInFlight: flags.fastPathMaxTokenReviewsInFlight }),
    'claim-controller',
  );
  const informer = startPeerInformer(kc, set, { name: flags.fastPathService, namespace, role: 'claim-controller fast-path' }, log);
  return {
    peers: { set, client, settleMs, synced: () => informer.hasSynced(), ...(onCall ? { onCall } : {}) },
    identity,
    stop: async () => {
      await informer.stop();
      client.close();
    },
  };
}
