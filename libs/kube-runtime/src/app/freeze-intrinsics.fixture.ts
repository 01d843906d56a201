// Run as its own process by freeze-intrinsics.test.ts: an app started through runApp tries what
// hostile input would do to the process's prototypes, and prints what held, as one JSON line.
import { z } from 'zod';
import { runApp } from './run-app';

type Loose = Record<string, unknown>;

/** Whether the write took effect: strict code throws on a frozen object, sloppy code ignores the write. */
function attempt(write: () => void, took: () => boolean): 'refused' | 'written' {
  try {
    write();
  } catch {
    // refused; what took effect decides below
  }
  return took() ? 'written' : 'refused';
}

class NamedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NamedError';
  }
}

void runApp(
  {
    name: 'freeze-probe',
    summary: 'Reports whether the prototypes are frozen',
    schema: z.object({}),
    logger: () => ({ level: 'silent' }),
    start: () => {
      const plain: Loose = {};
      const viaProto = attempt(
        () => ((plain['__proto__'] as Loose)['polluted'] = 'yes'),
        () => (({}) as Loose)['polluted'] !== undefined,
      );
      const viaConstructor = attempt(
        () => (((plain['constructor'] as Loose)['prototype'] as Loose)['authenticated'] = true),
        () => (({}) as Loose)['authenticated'] !== undefined,
      );
      const viaArray = attempt(
        () => ((Object.getPrototypeOf([]) as Loose)['polluted'] = 'yes'),
        () => ([] as unknown as Loose)['polluted'] !== undefined,
      );
      const original = Object.prototype.toString;
      const replaced = attempt(
        () => ((Object.prototype as Loose)['toString'] = () => 'x'),
        () => Object.prototype.toString !== original,
      );
      // what ordinary code does on instances must still work
      const own: Loose = {};
      own['toString'] = () => 'own';
      const report = {
        viaProto,
        viaConstructor,
        viaArray,
        replaced,
        inherited: ({} as Loose)['polluted'] ?? ({} as Loose)['authenticated'] ?? ([] as unknown as Loose)['polluted'] ?? null,
        errorName: new NamedError('m').name,
        ownToString: String(own),
      };
      process.stdout.write(`${JSON.stringify(report)}\n`);
      return { stop: async () => undefined, done: Promise.resolve() };
    },
  },
  { freezeIntrinsics: process.argv.includes('--no-freeze') ? false : undefined, argv: [] },
).then((code) => process.exit(code));
