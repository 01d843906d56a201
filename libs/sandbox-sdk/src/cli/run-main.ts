import { basename } from 'node:path';
import { COMPLETE_COMMAND, main } from './main';

// the process entry point of bin/kubectl-sandbox and bin/kubectl_complete-sandbox (kubectl runs
// the second for `kubectl sandbox <TAB>`); exitCode (not exit) lets stdout drain
const args = process.argv.slice(2);
const completing = basename(process.argv[1] ?? '').startsWith('kubectl_complete-');
void main(completing ? [COMPLETE_COMMAND, ...args] : args).then((code) => {
  process.exitCode = code;
});
