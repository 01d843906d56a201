import type { Command } from './args';

/** One command's page: what `kubectl sandbox COMMAND --help` prints. */
interface CommandHelp {
  /** One line of the overview. */
  summary: string;
  usage: string[];
  about: string;
  /** The command's own flags, beside the common ones. */
  flags?: string[];
  examples?: string[];
}

const TOKEN_FLAGS = [
  '    --show-token         print the sandbox token (it is never printed otherwise)',
  '    --token-file FILE    write the sandbox token to FILE (mode 0600)',
];

const OUTPUT_FLAGS = [
  '-o, --output FORMAT       json, yaml, name or wide (default: a table)',
  '    --no-headers         a table without its header line',
];

export const COMMON_FLAGS = [
  "-n, --namespace NS       namespace (default: the current context's)",
  '    --kubeconfig FILE    kubeconfig (default: $KUBECONFIG, then ~/.kube/config)',
  '    --context NAME       kubeconfig context (default: the current one)',
  '    --request-timeout D  give up after D (e.g. 30s; claim default 2m)',
  '-h, --help               this help',
];

export const COMMAND_HELP: Record<Command, CommandHelp> = {
  claim: {
    summary: 'claim a warm sandbox of a pool',
    usage: ['claim POOL [--wait] [--fast] [--name NAME] [--ttl SECONDS] [--show-token | --token-file FILE]'],
    about:
      'Claims a warm sandbox of the SandboxWarmPool POOL: a SandboxClaim, or with --fast one round trip to the fast path. With --wait it waits until the claim is Ready; Ctrl-C while waiting deletes the claim it made.',
    flags: [
      '    --wait               wait until the claim is Ready and print where it runs (implied by --fast)',
      '    --fast               the fast path (POST /v1/claims): a warm VM in one round trip',
      "    --name NAME          the claim's name (default: POOL-<random>)",
      '    --ttl SECONDS        release the sandbox this long after it is bound',
      "    --fast-path-url URL  the fast path's URL ($SANDBOX_SCALE_FAST_PATH_URL; default: found from its Service)",
      '    --fast-path-ca FILE  CA of its serving certificate ($SANDBOX_SCALE_FAST_PATH_CA_FILE)',
      '    --fast-path-token-file FILE   a token for its audience (default: minted for your ServiceAccount)',
      ...TOKEN_FLAGS,
      ...OUTPUT_FLAGS,
    ],
    examples: ['kubectl sandbox claim python-agent --wait', 'kubectl sandbox claim python-agent --fast --token-file /tmp/sandbox.tok'],
  },
  list: {
    summary: 'list the sandboxes of the namespace, claimed or not',
    usage: ['list [-A] [-l SELECTOR]'],
    about:
      "Lists the sandboxes of the namespace: those held by a claim, with the claim's pool and readiness, and those made without one (kubectl create -f, a fork, a restore).",
    flags: [
      '-A, --all-namespaces     every namespace',
      '-l, --selector SELECTOR  only sandboxes whose labels match (as kubectl -l)',
      ...OUTPUT_FLAGS,
    ],
    examples: ['kubectl sandbox list', 'kubectl sandbox list -A -o wide', 'kubectl sandbox list -l team=search -o name'],
  },
  pause: {
    summary: 'pause a sandbox',
    usage: ['pause NAME'],
    about: "Pauses the sandbox's VM; its memory is kept on its node.",
    flags: OUTPUT_FLAGS,
  },
  resume: {
    summary: 'resume a paused sandbox',
    usage: ['resume NAME'],
    about: 'Resumes a paused sandbox.',
    flags: OUTPUT_FLAGS,
  },
  fork: {
    summary: 'copy a running sandbox into new ones',
    usage: ['fork NAME [--count N] [--ttl SECONDS]'],
    about: "Makes COUNT copies of a running sandbox, each a sandbox of its own that starts from the parent's memory and files.",
    flags: [
      '    --count N            how many children (default 1)',
      '    --ttl SECONDS        release each child this long after it starts',
      ...OUTPUT_FLAGS,
    ],
  },
  snapshot: {
    summary: 'checkpoint a sandbox',
    usage: ['snapshot NAME [--snapshot-name LABEL]'],
    about: 'Checkpoints the sandbox; restore makes a new sandbox from it.',
    flags: ['    --snapshot-name LABEL   a label for the checkpoint', ...OUTPUT_FLAGS],
  },
  snapshots: {
    summary: "list a sandbox's checkpoints",
    usage: ['snapshots NAME'],
    about: "Lists the sandbox's checkpoints.",
    flags: OUTPUT_FLAGS,
  },
  restore: {
    summary: 'make a sandbox from a checkpoint',
    usage: ['restore NAME --snapshot ID --name NEW [--ttl SECONDS] [--show-token | --token-file FILE]'],
    about: 'Makes the sandbox NEW from a checkpoint of NAME (also after NAME is gone).',
    flags: [
      '    --snapshot ID        the checkpoint (kubectl sandbox snapshots NAME)',
      "    --name NEW           the new sandbox's name",
      '    --ttl SECONDS        release it this long after it starts',
      ...TOKEN_FLAGS,
      ...OUTPUT_FLAGS,
    ],
  },
  promote: {
    summary: "make a sandbox's state a template's prototype",
    usage: ['promote NAME --template TEMPLATE'],
    about:
      "Makes the sandbox's state the prototype of the SandboxTemplate TEMPLATE of the namespace; the node names it promoted..<digest>.",
    flags: ['    --template TEMPLATE  the SandboxTemplate to promote into', ...OUTPUT_FLAGS],
  },
  stats: {
    summary: "print a sandbox's CPU and memory use",
    usage: ['stats NAME'],
    about: "Prints the sandbox's CPU, memory and disk use, as its node measures them.",
    flags: OUTPUT_FLAGS,
  },
  'e2b-key': {
    summary: "print e2b's export lines with a ServiceAccount's key",
    usage: ['e2b-key SERVICEACCOUNT [--duration 1h] [--url URL]'],
    about:
      'Mints a token of the ServiceAccount (TokenRequest, as kubectl create token) and prints export E2B_API_KEY, E2B_API_URL and E2B_SANDBOX_URL: e2b\'s SDKs then create and use sandboxes of the namespace as that ServiceAccount, under its RBAC. eval "$(kubectl sandbox e2b-key agent)" sets them.',
    flags: [
      "    --duration D         the token's lifetime (at least 10m; default the API server's, one hour)",
      "    --url URL            e2b's API of the cluster (default $E2B_API_URL, which npm start prints)",
    ],
  },
  token: {
    summary: "print a claim's sandbox token",
    usage: ['token NAME'],
    about: "Prints the claim's sandbox token, from its Secret (only a claim whose pool gives one has it).",
  },
  release: {
    summary: 'give a sandbox back (deletes its claim)',
    usage: ['release NAME'],
    about: 'Deletes the claim, or the sandbox when no claim holds it; its VM goes back to its node.',
    flags: OUTPUT_FLAGS,
  },
  exec: {
    summary: 'run a command in a sandbox',
    usage: ['exec NAME [--timeout 30s] [--cwd DIR] [--env K=V]... -- CMD [ARGS...]'],
    about:
      "Runs a command in the sandbox with your own credentials (sandboxes/exec); prints its stdout and stderr to this process's and exits with its exit code.",
    flags: [
      "    --timeout D          the command's time limit (e.g. 30s); the node kills it after D",
      '    --cwd DIR            working directory in the sandbox',
      "    --env K=V            add to the command's environment (repeatable)",
    ],
    examples: ["kubectl sandbox exec NAME --timeout 30s -- python3 -c 'print(1)'"],
  },
  cp: {
    summary: 'copy files into or out of a sandbox',
    usage: ['cp LOCAL NAME:PATH', 'cp NAME:PATH LOCAL'],
    about:
      "Copies a file, or a directory's contents as a tar, into or out of a sandbox (sandboxes/files), as kubectl cp does. A local path with a colon is written ./a:b.",
    examples: ['kubectl sandbox cp ./src NAME:/work/src', 'kubectl sandbox cp NAME:/work/out ./out'],
  },
  'port-forward': {
    summary: 'forward a local port to a sandbox port',
    usage: ['port-forward NAME [LOCAL:]REMOTE'],
    about:
      'Listens on 127.0.0.1:LOCAL and relays each connection to the guest port REMOTE (sandboxes/portforward) until interrupted. REMOTE alone: the same port here; :REMOTE: a free one.',
    examples: ['kubectl sandbox port-forward NAME 8080:8888'],
  },
  version: {
    summary: "print the plugin's release",
    usage: ['version'],
    about: "Prints the plugin's release; needs no cluster.",
    flags: ['-o, --output FORMAT       json or yaml'],
  },
  completion: {
    summary: 'print a shell completion script',
    usage: ['completion bash|zsh'],
    about:
      'Prints a shell completion script for kubectl-sandbox. `kubectl sandbox <TAB>` completes through kubectl itself, with the kubectl_complete-sandbox the package installs beside kubectl-sandbox.',
    examples: ['source <(kubectl sandbox completion bash)', 'kubectl sandbox completion zsh > "${fpath[1]}/_kubectl-sandbox"'],
  },
};

const wrap = (text: string, width = 96): string[] => {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  return line === '' ? lines : [...lines, line];
};

/** `kubectl sandbox COMMAND --help`. */
export function commandHelp(command: Command): string {
  const h = COMMAND_HELP[command];
  const out = [...wrap(h.about), '', 'Usage:', ...h.usage.map((u) => `  kubectl sandbox ${u}`), ''];
  if (h.examples) out.push('Examples:', ...h.examples.map((e) => `  ${e}`), '');
  out.push('Flags:', ...(h.flags ?? []).map((f) => `  ${f}`), ...COMMON_FLAGS.map((f) => `  ${f}`), '');
  return out.join('\n');
}

/** `kubectl sandbox --help`: every command on a line, and where each command's page is. */
export function overview(): string {
  const width = Math.max(...Object.keys(COMMAND_HELP).map((c) => c.length));
  const rows = (Object.entries(COMMAND_HELP) as [Command, CommandHelp][]).map(([c, h]) => `  ${c.padEnd(width + 2)}${h.summary}`);
  return [
    'Claim and drive sandbox-scale sandboxes.',
    '',
    'Usage:',
    '  kubectl sandbox COMMAND [NAME] [flags]',
    '',
    'Commands:',
    ...rows,
    '',
    "NAME is a sandbox (kubectl get sandboxes); a claimed sandbox has its claim's name.",
    "`kubectl sandbox COMMAND --help` shows one command's flags and examples.",
    '',
    'Flags of every command:',
    ...COMMON_FLAGS.map((f) => `  ${f}`),
    '',
  ].join('\n');
}
