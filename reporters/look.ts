// How the terminal's text looks, once its words are decided: the colours (PASS green, FAIL red, what the host
// failed magenta, a warning yellow) and the width to fit. The command decides whether to colour and how wide
// (cli/stdout.ts: a terminal, NO_COLOR, FORCE_COLOR, COLUMNS); the reporters only follow it, so a report read
// from a file or a pipe looks the same as ever.
import type { CheckStatus } from '../results/status.js';

/** What a piece of text is, for its colour. */
export type Style = 'pass' | 'fail' | 'host' | 'warn' | 'dim';

/** Text in a style: ANSI colours, or the text as it is. */
export type Paint = (text: string, style: Style) => string;

/** How the terminal's text is laid out: its width (none: as wide as it needs, a pipe's) and its colours. */
export interface Look {
  width?: number;
  paint?: Paint;
}

/** SGR codes: the colour's and the one that ends it (39 the default colour, 22 normal intensity). */
const SGR: Readonly<Record<Style, readonly [number, number]>> = { pass: [32, 39], fail: [31, 39], host: [35, 39], warn: [33, 39], dim: [2, 22] };

export const plain: Paint = (text) => text;
export const ansi: Paint = (text, style) => (text ? `\x1b[${SGR[style][0]}m${text}\x1b[${SGR[style][1]}m` : text);

/** The painter of a terminal that wants colour, or of one that does not. */
export const painter = (colour: boolean): Paint => (colour ? ansi : plain);

/** A check status's colour: pass green, the driver's failures red, the host's magenta, warn yellow; skip none. */
export function statusStyle(status: CheckStatus): Style | undefined {
  switch (status) {
    case 'pass':
      return 'pass';
    case 'fail':
    case 'crash':
    case 'timeout':
      return 'fail';
    case 'error':
      return 'host';
    case 'warn':
      return 'warn';
    case 'skip':
      return undefined;
  }
}

/** `text` in a status's colour (as it is for a status without one). */
export const paintStatus = (paint: Paint, text: string, status: CheckStatus): string => {
  const style = statusStyle(status);
  return style ? paint(text, style) : text;
};

/**
 * `line` cut into lines of at most `width` characters at spaces, the lines after the first indented by `indent`
 * spaces more than the line itself is (a word longer than a line is cut where it must be). No width: the line as
 * it is.
 */
export function wrap(line: string, width: number | undefined, indent = 2): string[] {
  if (width === undefined || line.length <= width) return [line];
  const lead = ' '.repeat(/^ */.exec(line)![0].length + indent);
  const room = Math.max(width - lead.length, 10);
  const out: string[] = [];
  let rest = line;
  let first = true;
  while (rest.length > (first ? width : room)) {
    const max = first ? width : room;
    const cut = rest.lastIndexOf(' ', max);
    const at = cut > max / 3 ? cut : max;
    out.push(`${first ? '' : lead}${rest.slice(0, at)}`);
    rest = rest.slice(at).replace(/^ +/, '');
    first = false;
  }
  out.push(`${first ? '' : lead}${rest}`);
  return out;
}
