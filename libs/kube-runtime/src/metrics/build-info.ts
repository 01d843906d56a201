import type { Registry } from 'prom-client';
import { z } from 'zod';
import { gauge } from './metric-factory';

/** The image's build stamps; an unstamped build (a checkout run with tsx) reports "unknown". */
export const BuildStampSchema = z.object({
  SANDBOX_SCALE_VERSION: z.string().min(1).default('unknown'),
  SANDBOX_SCALE_REVISION: z.string().min(1).default('unknown'),
});
export type BuildStamp = z.infer<typeof BuildStampSchema>;

/**
 * `sandbox_scale_build_info{app,version,revision,node_version} 1`: joined on `job`/`pod`, it tells
 * which build each scraped replica runs, so a rollout that is half done shows on a dashboard.
 */
export function registerBuildInfo(registry: Registry, app: string, env: Record<string, string | undefined> = process.env): void {
  const stamp = BuildStampSchema.parse({
    SANDBOX_SCALE_VERSION: env['SANDBOX_SCALE_VERSION'] || undefined,
    SANDBOX_SCALE_REVISION: env['SANDBOX_SCALE_REVISION'] || undefined,
  });
  gauge(registry, 'sandbox_scale_build_info', 'The build every app runs: always 1, the build in its labels.', [
    'app',
    'version',
    'revision',
    'node_version',
  ]).set({ app, version: stamp.SANDBOX_SCALE_VERSION, revision: stamp.SANDBOX_SCALE_REVISION, node_version: process.version }, 1);
}
