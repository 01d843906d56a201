import { loadConfigOrExit, managerFlagShape } from '@sandbox-scale/kube-runtime';
import { z } from 'zod';

const ConfigSchema = z.object({ ...managerFlagShape });

loadConfigOrExit(ConfigSchema, { program: 'claim-controller', summary: 'sandbox-scale claim-controller' });
