// The shell of every HTML page the command writes (`report --html`, `history report`): one self-contained page,
// nothing on it fetched (no script, no external style, font or image), which its Content-Security-Policy says to
// the browser too; every text from results or the store escaped with escapeHtml.

/** What the page may load: nothing but its own inline style and data: images. */
export const CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

const CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/g;
const NOT_A_CHAR = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]|[\uFFFE\uFFFF]/g;

/** `s` as HTML text or a quoted attribute value: markup characters as entities, control characters and non-characters as U+FFFD. */
export function escapeHtml(s: string): string {
  return String(s)
    .replace(CONTROL, '\uFFFD')
    .replace(NOT_A_CHAR, '\uFFFD')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** A time as the pages write it, `YYYY-MM-DD HH:MM UTC`; the text as given when it is not a time. */
export const utcMinute = (t: string): string => (Number.isNaN(Date.parse(t)) ? t : `${new Date(Date.parse(t)).toISOString().slice(0, 16).replace('T', ' ')} UTC`);

/** The style every page starts with: the font, the colours, the headings' sizes. */
const BASE_STYLE = `
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { font-family: "DejaVu Sans", "Liberation Sans", "Helvetica Neue", Arial, sans-serif; font-size: 13px; color: #1b1f24; background: #fff; margin: 24px; line-height: 1.4; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 28px 0 8px; border-bottom: 1px solid #d0d7de; padding-bottom: 4px; }
`;

/** A whole page: its head (the policy, the title, the shell's style then the page's `style`), the title again as <h1>, then the `body` lines. */
export function htmlPage(page: { title: string; style: string; body: string[] }): string {
  const title = escapeHtml(page.title);
  const lines = [
    '<!DOCTYPE html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${CONTENT_SECURITY_POLICY}">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="referrer" content="no-referrer">',
    `<title>${title}</title>`,
    `<style>${BASE_STYLE}${page.style}</style>`,
    '</head>',
    '<body>',
    `<h1>${title}</h1>`,
    ...page.body,
    '</body>',
    '</html>',
  ];
  return `${lines.join('\n')}\n`;
}
