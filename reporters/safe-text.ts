// Text from results files and drivers, made safe for where it is shown: the terminal (no control character may
// reach it raw: an escape sequence in a device name could rewrite the screen or the window title), and the
// reports that repeat it (a name or a message is capped, so that a 100 MB name cannot make a 500 MB page), and
// Markdown (markdownText: here, below both the step summary and the host-fault lines that use it).

/** C0 controls but tab and newline, DEL, and the C1 controls (U+0080 to U+009F: 0x9B is an escape on some terminals). */
const CONTROL = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F]/g;

/** `s` for the terminal: each control character as `\xNN` (tab and newline kept when `lines`, else shown too). */
export function terminalSafe(s: string, lines = true): string {
  const escaped = s.replace(CONTROL, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return lines ? escaped : escaped.replace(/[\t\n]/g, (c) => (c === '\t' ? '\\x09' : '\\x0a'));
}

/** How much of a string a report repeats: a device's name, driver and id; a message (observed, expected, log line). */
export const NAME_CAP = 200;
export const MESSAGE_CAP = 2000;

/** How many of a list built from the machine (the processes on a GPU) a line names before it says how many more. */
export const LIST_CAP = 10;

/** The first `max` of `items`, then "…and N more" when there were more. */
export function capList(items: readonly string[], max = LIST_CAP): string[] {
  return items.length <= max ? [...items] : [...items.slice(0, max), `…and ${items.length - max} more`];
}

/** `s` cut to `max` characters, with a visible "…(N more characters)" when cut. */
export function capText(s: string, max: number): string {
  if (s.length <= max) return s;
  return `${s.slice(0, max)}…(${s.length - max} more characters)`;
}

/** `s` as literal inline text: Markdown punctuation backslash-escaped (`|` included, for table cells), `&` as an entity, line breaks as `<br>`. */
export function markdownText(s: string): string {
  return s
    .replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/g, '\uFFFD')
    .replace(/[\\`*_[\]<>|~$]/g, (c) => `\\${c}`)
    .replace(/&/g, '&amp;')
    .replace(/\t/g, ' ')
    .replace(/\r\n|\r|\n/g, '<br>');
}
