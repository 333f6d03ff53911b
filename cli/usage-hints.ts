// Usage errors that help: yargs' complaints told again in words, one line, with the option as it was typed
// (`--bogus`, not `bogus`), the nearest option or command ("did you mean --baseline?", "did you mean run?"), the
// usage of the command the user was in, and where to read more (`--help`).
import {
  COMPARE_COMMAND_OPTIONS,
  HISTORY_ADD_OPTIONS,
  HISTORY_COMPARE_OPTIONS,
  HISTORY_REPORT_OPTIONS,
  LIST_OPTIONS,
  MERGE_OPTIONS,
  REPORT_OPTIONS,
  RUN_ONLY_OPTIONS,
  RUN_OPTIONS,
  RUNTIMES_OPTIONS,
} from './options.js';

const NAME = 'mapped-reg-conformance';

/** Each command: how it is used, and its options (for "did you mean"). */
const COMMANDS: Readonly<Record<string, { usage: string; options: readonly string[] }>> = {
  run: { usage: `${NAME} [run] [options]`, options: Object.keys(RUN_OPTIONS) },
  list: { usage: `${NAME} list [--checks] [options]`, options: Object.keys(LIST_OPTIONS).filter((k) => !(RUN_ONLY_OPTIONS as readonly string[]).includes(k)) },
  compare: { usage: `${NAME} compare OLD NEW [--json] [--expectations FILE] [--max-drop N]`, options: Object.keys(COMPARE_COMMAND_OPTIONS) },
  merge: { usage: `${NAME} merge FILES... -o OUT`, options: [...Object.keys(MERGE_OPTIONS), 'output'] },
  report: { usage: `${NAME} report FILES... --html OUT`, options: Object.keys(REPORT_OPTIONS) },
  runtimes: { usage: `${NAME} runtimes --out DIR [--runtime PATH]... [--baseline-runtime PATH] [options of run] | --list`, options: Object.keys(RUNTIMES_OPTIONS) },
  history: { usage: `${NAME} history add|compare|report [options]`, options: [] },
  'history add': { usage: `${NAME} history add PATHS... --db FILE`, options: Object.keys(HISTORY_ADD_OPTIONS) },
  'history compare': { usage: `${NAME} history compare --db FILE --old SEL --new SEL [--json] [--expectations FILE] [--max-drop N]`, options: Object.keys(HISTORY_COMPARE_OPTIONS) },
  'history report': { usage: `${NAME} history report --db FILE --html OUT [--expectations FILE] [--max-drop N]`, options: Object.keys(HISTORY_REPORT_OPTIONS) },
};
const TOP = ['run', 'list', 'compare', 'merge', 'report', 'runtimes', 'history'];
const HISTORY = ['add', 'compare', 'report'];
/** Options every command has. */
const COMMON = ['help', 'version'];

/** The command the arguments are for: `history compare`, `merge`; `run` when the first is no command. */
export function commandOf(args: readonly string[]): string {
  const first = args[0];
  if (first === undefined || !TOP.includes(first)) return 'run';
  if (first === 'history' && args[1] !== undefined && HISTORY.includes(args[1])) return `history ${args[1]}`;
  return first;
}

/** The edit distance of two words, a swap of two neighbours counting as one edit (`rnu` is one from `run`). */
export function distance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/** The nearest of `names` to `word` (of three letters or more: a prefix of it, or within a third of its length in edits), or undefined. */
export function nearest(word: string, names: readonly string[]): string | undefined {
  const prefixed = names.filter((n) => word.length >= 3 && (n.startsWith(word) || word.startsWith(n)));
  if (prefixed.length === 1) return prefixed[0];
  // a word of one or two letters is too short to guess from (-x is not a mistyped -o)
  const limit = Math.min(3, Math.floor(word.length / 3));
  if (limit === 0) return undefined;
  const scored = names.map((n) => ({ n, d: distance(word, n) })).filter((x) => x.d <= limit);
  scored.sort((x, y) => x.d - y.d);
  return scored[0]?.n;
}

/** `--name` for a long option, `-n` for a one-letter one. */
const dashed = (name: string): string => (name.length === 1 ? `-${name}` : `--${name}`);

/** How an unknown argument yargs names (`bogus`, without its dashes) was typed: `--bogus`, `-b`, or `bogus` (not an option). */
function typed(name: string, args: readonly string[]): string {
  for (const arg of args) {
    if (arg === '--') break;
    const bare = arg.replace(/^--?(?:no-)?/, '').split('=')[0];
    if (arg.startsWith('-') && bare === name) return arg.split('=')[0]!;
  }
  return name;
}

/** What to say of one unknown argument: an option (with the nearest of the command's), or a word (the nearest command). */
function unknownOne(name: string, args: readonly string[], command: string): string {
  const as = typed(name, args);
  if (as.startsWith('-')) {
    const near = nearest(as.replace(/^-+/, ''), [...(COMMANDS[command]?.options ?? []), ...COMMON]);
    return `unknown option ${as}${near ? ` (did you mean ${dashed(near)}?)` : ''}`;
  }
  const place = command === 'history' ? HISTORY : args[0] === as ? TOP : [];
  const near = nearest(as, place);
  return `unexpected argument ${JSON.stringify(as)}${near ? ` (did you mean ${command === 'history' ? 'history ' : ''}${near}?)` : place.length ? ` (the commands: ${place.join(', ')})` : ''}`;
}

/** A usage error's closing words: the command's usage and its --help. */
function usageOf(command: string): string {
  const c = COMMANDS[command] ?? COMMANDS.run!;
  const help = command === 'run' ? `${NAME} --help` : `${NAME} ${command} --help`;
  return `usage: ${c.usage} (more: ${help})`;
}

/** A value refused (a number, an option given twice) with where to read what it must be. */
export function withHelp(message: string, args: readonly string[]): string {
  const command = commandOf(args);
  return `${message} (see ${NAME}${command === 'run' ? '' : ` ${command}`} --help)`;
}

/**
 * One of yargs' complaints (`msg`) told again in words for the arguments `args`: an unknown argument with its dashes
 * and the nearest option or command, too few arguments with the command's usage, a missing option or value by its
 * name; anything else (a value refused while it was read) with where to read more. Always one line, naming --help.
 */
export function usageProblem(msg: string, args: readonly string[]): string {
  const command = commandOf(args);
  const unknown = /^Unknown arguments?: (.*)$/.exec(msg);
  if (unknown) {
    const names = unknown[1]!.split(', ');
    // yargs names `--bogus-opt` twice (bogus-opt, bogusOpt): one each as typed
    const kebab = (n: string): string => n.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
    const told = names.filter((n) => kebab(n) === n || !names.includes(kebab(n)));
    return `${told.map((n) => unknownOne(n, args, command)).join('; ')}; ${usageOf(command)}`;
  }
  const few = /^Not enough non-option arguments: got (\d+), need at least (\d+)$/.exec(msg);
  if (few) return `${command} needs ${few[2]} argument${few[2] === '1' ? '' : 's'}, got ${few[1]}; ${usageOf(command)}`;
  const missing = /^Missing required arguments?: (.*)$/.exec(msg);
  if (missing) return `${command} needs ${missing[1]!.split(', ').map(dashed).join(' and ')}; ${usageOf(command)}`;
  const noValue = /^Not enough arguments following: (.*)$/.exec(msg);
  if (noValue) return `${dashed(noValue[1]!)} needs a value; ${usageOf(command)}`;
  if (/^history needs a command/.test(msg) || /^Too many non-option arguments/.test(msg)) return `${msg}; ${usageOf(command)}`;
  return withHelp(msg, args);
}
