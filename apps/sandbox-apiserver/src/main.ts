import { loadConfigOrExit, managerFlagShape } from '@sandbox-scale/kube-runtime';
import { z } from 'zod';

const ConfigSchema = z.object({ ...managerFlagShape });

loadConfigOrExit(ConfigSchema, { program: 'sandbox-apiserver', summary: 'sandbox-scale sandbox-apiserver' });
