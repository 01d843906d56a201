import { COMMANDS, OPTION_NAMES, type Command } from './args';
import { OUTPUT_FORMATS } from './output';

/**
 * Shell completion in the protocol kubectl uses for plugins (and cobra for its own commands):
 * `kubectl __complete sandbox ARGS… CURRENT` runs `kubectl_complete-sandbox ARGS… CURRENT`, which
 * prints one candidate per line and then `:DIRECTIVE`. The scripts of `kubectl sandbox completion`
 * ask the same question of `kubectl-sandbox __complete`, so both shells and kubectl get one answer.
 */

/** Cobra's ShellCompDirective bits. */
export const DIRECTIVE = { default: 0, error: 1, noSpace: 2, noFileComp: 4 } as const;

/** What a completion may look up in the cluster: a namespace's pools and sandboxes. */
export interface CompletionLookup {
  pools(namespace: string | undefined): Promise<string[]>;
  sandboxes(namespace: string | undefined): Promise<string[]>;
  namespaces(): Promise<string[]>;
  contexts(): string[];
}

export interface Completion {
  items: string[];
  directive: number;
}

/** The flags that take a value, so the word after one is that value, not a positional. */
const VALUE_FLAGS = new Set(OPTION_NAMES.filter((o) => o.takesValue).flatMap((o) => [`--${o.name}`, ...(o.short ? [`-${o.short}`] : [])]));

/** The commands whose NAME is a sandbox (claim's is a pool, completion's a shell). */
const TAKES_SANDBOX: ReadonlySet<Command> = new Set(COMMANDS.filter((c) => !['claim', 'list', 'version', 'completion', 'cp'].includes(c)));

const starting = (prefix: string, items: readonly string[]): string[] => items.filter((i) => i.startsWith(prefix));

/** Looks up names in the cluster, and answers nothing (rather than an error) when it cannot. */
async function quietly(names: Promise<string[]>): Promise<string[]> {
  try {
    return await names;
  } catch {
    return [];
  }
}

export async function complete(words: readonly string[], lookup: CompletionLookup): Promise<Completion> {
  const current = words.at(-1) ?? '';
  const before = words.slice(0, -1);
  const previous = before.at(-1);
  // the namespace the line names, for the names it completes
  const nsAt = before.findIndex((w) => w === '-n' || w === '--namespace');
  const namespace = nsAt >= 0 ? before[nsAt + 1] : before.find((w) => w.startsWith('--namespace='))?.slice('--namespace='.length);

  if (previous !== undefined && VALUE_FLAGS.has(previous)) {
    if (previous === '-o' || previous === '--output') return { items: starting(current, OUTPUT_FORMATS), directive: DIRECTIVE.noFileComp };
    if (previous === '-n' || previous === '--namespace')
      return { items: starting(current, await quietly(lookup.namespaces())), directive: DIRECTIVE.noFileComp };
    if (previous === '--context') return { items: starting(current, lookup.contexts()), directive: DIRECTIVE.noFileComp };
    // --kubeconfig, --token-file, --cwd…: a path, as the shell completes it
    return { items: [], directive: DIRECTIVE.default };
  }
  if (current.startsWith('-')) {
    const flags = OPTION_NAMES.map((o) => `--${o.name}`);
    return { items: starting(current, flags), directive: DIRECTIVE.noFileComp };
  }
  const positionals: string[] = [];
  for (let i = 0; i < before.length; i++) {
    const w = before[i] ?? '';
    if (w === '--') return { items: [], directive: DIRECTIVE.default }; // exec's command: the shell's business
    if (VALUE_FLAGS.has(w)) i++;
    else if (!w.startsWith('-')) positionals.push(w);
  }
  const [command] = positionals;
  if (command === undefined || command === 'help')
    return { items: starting(current, [...COMMANDS, ...(command === undefined ? ['help'] : [])]), directive: DIRECTIVE.noFileComp };
  if (!(COMMANDS as readonly string[]).includes(command)) return { items: [], directive: DIRECTIVE.noFileComp };
  const c = command as Command;
  const position = positionals.length; // 1: the command's first argument
  if (c === 'completion') return { items: position === 1 ? starting(current, ['bash', 'zsh']) : [], directive: DIRECTIVE.noFileComp };
  if (c === 'claim' && position === 1)
    return { items: starting(current, await quietly(lookup.pools(namespace))), directive: DIRECTIVE.noFileComp };
  if (c === 'cp' && position <= 2) {
    // a sandbox side is NAME:PATH; a local side is a path the shell completes
    if (current.includes(':') || current.startsWith('.') || current.startsWith('/')) return { items: [], directive: DIRECTIVE.default };
    const names = (await quietly(lookup.sandboxes(namespace))).map((n) => `${n}:`);
    return { items: starting(current, names), directive: names.length > 0 ? DIRECTIVE.noSpace : DIRECTIVE.default };
  }
  if (TAKES_SANDBOX.has(c) && position === 1)
    return { items: starting(current, await quietly(lookup.sandboxes(namespace))), directive: DIRECTIVE.noFileComp };
  return { items: [], directive: DIRECTIVE.noFileComp };
}

export function formatCompletion(c: Completion): string {
  return [...c.items, `:${c.directive}`].map((l) => `${l}\n`).join('');
}

/** `kubectl sandbox completion bash`: completes `kubectl-sandbox …` by asking it. */
export const BASH_COMPLETION = `# bash completion for kubectl-sandbox: source <(kubectl sandbox completion bash)
# (kubectl sandbox <TAB> completes through kubectl's own completion and kubectl_complete-sandbox)
_kubectl_sandbox() {
  local cur out directive items
  cur="\${COMP_WORDS[COMP_CWORD]}"
  out=$(kubectl-sandbox __complete "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null) || return
  directive=$(printf '%s\\n' "$out" | tail -n 1)
  directive=\${directive#:}
  items=$(printf '%s\\n' "$out" | sed '$d')
  COMPREPLY=()
  if [ -n "$items" ]; then
    local IFS=$'\\n'
    COMPREPLY=($(compgen -W "$items" -- "$cur"))
  fi
  if [ \${#COMPREPLY[@]} -eq 0 ] && [ $((directive & 4)) -eq 0 ]; then
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
  if [ $((directive & 2)) -ne 0 ]; then
    compopt -o nospace 2>/dev/null
  fi
}
complete -F _kubectl_sandbox kubectl-sandbox
`;

/** `kubectl sandbox completion zsh`: sourced, or saved as _kubectl-sandbox on fpath. */
export const ZSH_COMPLETION = `#compdef kubectl-sandbox
# zsh completion for kubectl-sandbox: source <(kubectl sandbox completion zsh), or save it as
# _kubectl-sandbox in a directory of $fpath
_kubectl_sandbox() {
  local out directive
  local -a lines items
  out=$(kubectl-sandbox __complete "\${(@)words[2,CURRENT]}" 2>/dev/null) || return 1
  lines=("\${(@f)out}")
  directive=\${lines[-1]#:}
  items=("\${(@)lines[1,-2]}")
  if (( \${#items} == 0 )); then
    (( directive & 4 )) || _files
    return
  fi
  if (( directive & 2 )); then
    compadd -S '' -- "\${items[@]}"
  else
    compadd -- "\${items[@]}"
  fi
}
if [ "\${funcstack[1]}" = "_kubectl-sandbox" ]; then
  _kubectl_sandbox "$@"
else
  compdef _kubectl_sandbox kubectl-sandbox
fi
`;
