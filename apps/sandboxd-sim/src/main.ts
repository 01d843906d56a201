import { createLogger, loadConfigOrExit } from '@sandbox-scale/kube-runtime';
import { CliFlagsSchema, simOptionsFromFlags } from './config';
import { startSim } from './fleet';

const flags = loadConfigOrExit(CliFlagsSchema, {
  program: 'sandboxd-sim',
  summary: 'Simulated sandboxd nodes (spec/sandboxd-api.md) on loopback ports. Prints {"nodes":[{name,url,port,addr}]} on stdout once listening.',
});
// stdout carries only the port report; logs go to stderr.
const logger = createLogger({ name: 'sandboxd-sim', level: flags.logLevel, destination: process.stderr });

async function main(): Promise<void> {
  const sim = await startSim({ ...simOptionsFromFlags(flags), logger });
  process.stdout.write(`${JSON.stringify({ nodes: sim.nodes.map(({ name, url, port, addr }) => ({ name, url, port, addr })) })}\n`);
  const shutdown = (signal: string): void => {
    logger.info({ signal }, 'stopping');
    sim.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, 'stop failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', () => shutdown('SIGINT'));
  process.once('SIGTERM', () => shutdown('SIGTERM'));
}

main().catch((err: unknown) => {
  logger.error({ err }, 'failed to start');
  process.exit(1);
});
