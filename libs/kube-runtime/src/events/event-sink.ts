import type { KubeConfig } from '@kubernetes/client-node';
import { EventResource } from '../client/resource';
import { ResourceClient } from '../client/resource-client';

/** events.k8s.io/v1 Event as written. */
export interface EventBody {
  apiVersion: 'events.k8s.io/v1';
  kind: 'Event';
  metadata: { name: string; namespace: string };
  eventTime: string;
  reportingController: string;
  reportingInstance: string;
  action: string;
  reason: string;
  note?: string;
  type: 'Normal' | 'Warning';
  regarding: { apiVersion?: string; kind: string; name: string; namespace?: string; uid?: string; resourceVersion?: string };
}

export interface EventSeries {
  count: number;
  lastObservedTime: string;
}

/** Where events go; a seam for tests. */
export interface EventSink {
  create(event: EventBody): Promise<void>;
  patchSeries(namespace: string, name: string, series: EventSeries): Promise<void>;
}

export class KubeEventSink implements EventSink {
  private readonly rc: ResourceClient;

  constructor(kc: KubeConfig) {
    this.rc = new ResourceClient(kc, EventResource);
  }

  async create(event: EventBody): Promise<void> {
    await this.rc.create(event.metadata.namespace, event);
  }

  async patchSeries(namespace: string, name: string, series: EventSeries): Promise<void> {
    await this.rc.mergePatch(namespace, name, { series });
  }
}
