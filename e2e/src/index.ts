export {
  startControlPlane,
  kubeconfigYaml,
  ControlPlaneStartError,
  type ControlPlane,
  type ControlPlaneOptions,
} from './control-plane/control-plane';
export { createCA, createLeaf, createSigningKey, type CertPair, type LeafOptions } from './control-plane/pki';
export { freePort } from './control-plane/ports';
export { toolsDir } from './control-plane/tools';
export { AppProcess, REPO_ROOT, SupervisedApp, type AppProcessOptions, type SupervisedAppOptions } from './system/app-process';
export { eventually, type EventuallyOptions } from './testing/eventually';
export { hostAddress, requireHostAddress } from './testing/host-address';
export { countingKubeConfig, type KubeRequestCount } from './testing/request-counter';
export { installChartAppRbac, type ChartApp, type ChartAppIdentity } from './testing/chart-rbac';
export { builtSdkPackage, type BuiltSdkPackage } from './testing/sdk-package';
export {
  MetricsScraper,
  NoMetricsEndpointError,
  bindMetricsReader,
  isNoMetricsEndpointError,
  scrapeMetrics,
  type MetricsEndpoint,
  type MetricsPage,
  type MetricsReader,
} from './testing/metrics-scraper';
export {
  applyCrds,
  createTestNamespace,
  deleteNamespace,
  kubeconfigForServiceAccount,
  serviceAccountToken,
  kubeconfigText,
  kubectl,
  kubectlJson,
  kubectlOk,
  runSuffix,
  runTool,
  testBinDir,
  testControlPlaneInfo,
  testKubeConfig,
  testKubeconfigPath,
  tokenKubeConfig,
  whoAmI,
  type ControlPlaneInfo,
  type RunResult,
} from './testing/cluster';
