// The command's standard output. It may fail (a reader that closed early, `| head -1`; a full disk): that must
// not lose the run, so a failure is told once on stderr, the run goes on, the reports are written, and the exit
// status is the run's (1 when a report that was going to standard output itself was lost). When a report goes to
// standard output (`--json -`), the command's own text goes to stderr, so that stdout carries the report alone.

let reserved = false;
let failed: string | undefined;
/** The report written to standard output, if any (its option). */
let report: string | undefined;
let installed = false;
/** A listing (`list`): no run goes on behind it, and a reader that stops early is not an error. */
let listing = false;

/** Stdout carries a report: everything else the command prints goes to stderr. */
export function reserveStdout(): void {
  reserved = true;
}

/** Whether the command's own text goes to a terminal (for the redrawn progress). */
export function sayIsTTY(): boolean {
  return (reserved ? process.stderr.isTTY : process.stdout.isTTY) === true;
}

/** The command only lists: a reader that closes early (`list --checks | head -1`) ends it quietly, as for `ls | head`. */
export function listingOnly(): void {
  listing = true;
}

/**
 * Whether the progress may be redrawn in place: a terminal that can move its cursor. TERM=dumb cannot, and
 * NO_COLOR (set and not empty, no-color.org) asks for plain text: both get the log's plain lines.
 */
export function progressRedraws(env: NodeJS.ProcessEnv = process.env): boolean {
  return sayIsTTY() && env.TERM !== 'dumb' && !env.NO_COLOR;
}

/**
 * Whether the command's own text is coloured (PASS green, FAIL red, the host's faults magenta): never with NO_COLOR
 * set and not empty (no-color.org); with FORCE_COLOR set and not empty, always (a pipe, a CI log too), unless it
 * is `0` or `false`; otherwise on a terminal, not under TERM=dumb. A pipe or a file gets no colour by default.
 */
export function colourWanted(env: NodeJS.ProcessEnv = process.env, tty: boolean = sayIsTTY()): boolean {
  if (env.NO_COLOR) return false;
  const force = env.FORCE_COLOR;
  if (force) return !['0', 'false'].includes(force.toLowerCase());
  return tty && env.TERM !== 'dumb';
}

/** The smallest width the command's text is fitted to: below it the table would be more gaps than columns. */
const MIN_WIDTH = 20;

/**
 * The width the command's text fits on a terminal: COLUMNS when set to a whole number (of at least 20), else the
 * terminal's own; none not on a terminal (a pipe, a CI log: the table whole, as wide as it needs), nor on one that
 * does not say.
 */
export function terminalWidth(env: NodeJS.ProcessEnv = process.env, tty: boolean = sayIsTTY()): number | undefined {
  if (!tty) return undefined;
  const columns = /^\d+$/.test(env.COLUMNS ?? '') ? Number(env.COLUMNS) : 0;
  if (columns > 0) return Math.max(columns, MIN_WIDTH);
  const own = (reserved ? process.stderr : process.stdout).columns;
  return own > 0 ? Math.max(own, MIN_WIDTH) : undefined;
}

/** Installs the handler of stdout's failures (once). */
export function guardStdout(): void {
  if (installed) return;
  installed = true;
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (failed !== undefined) return;
    failed = e.code ?? e.message;
    if (listing) {
      // the reader had what it wanted; any other failure lost the listing
      if (e.code !== 'EPIPE') process.stderr.write(`mapped-reg-conformance: standard output failed (${failed}): the listing is lost\n`);
      return;
    }
    const lost = report ? `: the ${report} report written there is lost` : '';
    process.stderr.write(`mapped-reg-conformance: standard output failed (${failed})${lost}; the run goes on and writes its other reports\n`);
  });
  process.on('exit', () => {
    // a report lost, or a listing lost otherwise than by its reader stopping
    if (failed !== undefined && (report || (listing && failed !== 'EPIPE')) && !process.exitCode) process.exitCode = 1;
  });
}

/** The command's own text: to stdout, or stderr when stdout carries a report; dropped once stdout has failed. */
export function say(text: string): void {
  if (reserved) process.stderr.write(text);
  else if (failed === undefined) process.stdout.write(text);
}

/** A report for standard output (`name`: its option). Throws when stdout has already failed. */
export function writeStdout(data: string, name: string): void {
  report = name;
  if (failed !== undefined) throw Object.assign(new Error(`standard output failed earlier (${failed})`), { code: failed });
  process.stdout.write(data);
}
