import { COMMANDS, OPTION_NAMES } from './args';
import { commandHelp, COMMAND_HELP, overview } from './help';

describe('kubectl sandbox help', () => {
  it('has a page for every command, naming its usage, and a line in the overview', () => {
    const top = overview();
    for (const c of COMMANDS) {
      expect(commandHelp(c)).toContain(`kubectl sandbox ${c}`);
      expect(top).toMatch(new RegExp(`^  ${c}\\s+\\S`, 'm'));
    }
  });

  it('documents every flag the parser takes on some page', () => {
    const pages = [overview(), ...COMMANDS.map(commandHelp)].join('\n');
    for (const o of OPTION_NAMES)
      expect({ flag: o.name, documented: pages.includes(`--${o.name}`) }).toEqual({ flag: o.name, documented: true });
  });

  it('keeps the overview to one line per command', () => {
    for (const c of COMMANDS) expect(COMMAND_HELP[c].summary.length).toBeLessThanOrEqual(60);
  });
});
