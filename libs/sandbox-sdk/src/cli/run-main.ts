import { main } from './main';

// the process entry point of bin/kubectl-sandbox; exitCode (not exit) lets stdout drain
void main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
