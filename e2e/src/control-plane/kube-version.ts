import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';

/** The Kubernetes version the test control plane and node run (e2e/tools/versions.json). */
export const KUBERNETES_VERSION = z
  .object({ kubernetes: z.string().regex(/^v1\.\d+\.\d+$/) })
  .parse(JSON.parse(readFileSync(join(__dirname, '..', '..', 'tools', 'versions.json'), 'utf8'))).kubernetes;

/**
 * `helm template` cannot ask a cluster its version, and the chart needs 1.30 (its kubeVersion):
 * it renders for the test control plane's, as a GitOps tool passes its cluster's.
 */
export const HELM_TEMPLATE_KUBE_VERSION = ['--kube-version', KUBERNETES_VERSION];
