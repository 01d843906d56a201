import { loadConfigOrExit, managerFlagShape } from '@sandbox-scale/kube-runtime';
import { z } from 'zod';

const ConfigSchema = z.object({ ...managerFlagShape });

loadConfigOrExit(ConfigSchema, { program: 'warmpool-driver', summary: 'sandbox-scale warmpool-driver' });
