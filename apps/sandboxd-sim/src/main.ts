import { runApp } from '@sandbox-scale/kube-runtime';
import { SandboxdSimFlagsSchema, simOptionsFromFlags } from './config';
import { startSim } from './fleet';

void runApp({
  name: 'sandboxd-sim',
  summary:
    'Simulated sandboxd nodes (the sandboxd HTTP API) on loopback ports. Prints {"nodes":[{name,url,port,addr}]} on stdout once listening.',
  schema: SandboxdSimFlagsSchema,
  // stdout carries only the port report; logs go to stderr.
  logger: (config) => ({ level: config.logLevel, destination: process.stderr }),
  start: async ({ config, log }) => {
    const sim = await startSim({ ...simOptionsFromFlags(config), logger: log });
    process.stdout.write(`${JSON.stringify({ nodes: sim.nodes.map(({ name, url, port, addr }) => ({ name, url, port, addr })) })}\n`);
    return sim;
  },
}).then((code) => process.exit(code));
