/**
 * HTML to readable text (also the second half of DOCX extraction, which mammoth turns into HTML first).
 * html-to-text's defaults suit e-mail, not an index: they uppercase headings, run table cells together, print link
 * URLs and wrap lines at 80 columns. This configuration keeps words as written and one table row per line.
 */
import { compile, type DomNode, type FormatCallback } from 'html-to-text';

/** The parser's nodes link their siblings; @types/html-to-text leaves the link out. */
type Sibling = DomNode & { readonly prev?: Sibling | null };

/** Whether an element comes before this one in its parent (whitespace text between cells does not count). */
function hasPreviousElement(elem: DomNode): boolean {
  for (let node = (elem as Sibling).prev; node; node = node.prev) if (node.type === 'tag') return true;
  return false;
}

/** One table row per line. */
const tableRow: FormatCallback = (elem, walk, builder) => {
  builder.openBlock({ leadingLineBreaks: 1 });
  walk(elem.children, builder);
  builder.closeBlock({ trailingLineBreaks: 1 });
};

/** Cells of a row separated by ` | `, so `Name | Price` does not read as one word. */
const tableCell: FormatCallback = (elem, walk, builder) => {
  if (hasPreviousElement(elem)) builder.addLiteral(' | ');
  walk(elem.children, builder);
};

/**
 * A paragraph, except inside a table cell (every DOCX cell has one), where it stays on the row's line.
 * (html-to-text selectors cannot say `td p`: it rejects combinators.)
 */
const paragraph: FormatCallback = (elem, walk, builder) => {
  if (isInTableCell(elem)) {
    if (hasPreviousElement(elem)) builder.addLiteral(' ');
    walk(elem.children, builder);
    return;
  }
  builder.openBlock({ leadingLineBreaks: 2 });
  walk(elem.children, builder);
  builder.closeBlock({ trailingLineBreaks: 2 });
};

function isInTableCell(elem: DomNode): boolean {
  for (let node = elem.parent; node; node = node.parent) {
    if (node.name === 'td' || node.name === 'th') return true;
    if (node.name === 'table') return false;
  }
  return false;
}

const heading = (leadingLineBreaks: number) => ({
  format: 'block',
  options: { leadingLineBreaks, trailingLineBreaks: 2 },
});

export const htmlToText: (html: string) => string = compile({
  wordwrap: false,
  // The default silently truncates input above 16 MiB characters; the file size limit is checked before this.
  limits: { maxInputLength: Number.MAX_SAFE_INTEGER },
  formatters: { tableRow, tableCell, paragraph },
  selectors: [
    { selector: 'a', options: { ignoreHref: true } },
    { selector: 'img', format: 'skip' },
    { selector: 'hr', format: 'block', options: { leadingLineBreaks: 2, trailingLineBreaks: 2 } },
    { selector: 'h1', ...heading(2) },
    { selector: 'h2', ...heading(2) },
    { selector: 'h3', ...heading(2) },
    { selector: 'h4', ...heading(2) },
    { selector: 'h5', ...heading(2) },
    { selector: 'h6', ...heading(2) },
    { selector: 'table', format: 'block', options: { leadingLineBreaks: 2, trailingLineBreaks: 2 } },
    { selector: 'tr', format: 'tableRow' },
    { selector: 'td', format: 'tableCell' },
    { selector: 'th', format: 'tableCell' },
    { selector: 'p', format: 'paragraph' },
    // Code and markup that is not text of the page.
    { selector: 'script', format: 'skip' },
    { selector: 'style', format: 'skip' },
    { selector: 'noscript', format: 'skip' },
    { selector: 'template', format: 'skip' },
    { selector: 'svg', format: 'skip' },
    { selector: 'iframe', format: 'skip' },
    { selector: 'object', format: 'skip' },
  ],
});

/** How many characters (UTF-16 code units) at the start of a text looksLikeHtml reads. */
export const HTML_HEAD_CHARACTERS = 4096;

/** Whether text that arrived under any name is an HTML document: it opens with a doctype or an `<html>` tag. */
export function looksLikeHtml(text: string): boolean {
  // Comments are skipped with indexOf, not a regex: `(<!--[\s\S]*?-->\s*)*` backtracks exponentially on a run of
  // empty comments that ends in anything else (40 of them, 281 bytes, took hours).
  const head = text.slice(0, HTML_HEAD_CHARACTERS);
  let at = skipWhitespace(head, 0);
  while (head.startsWith('<!--', at)) {
    const end = head.indexOf('-->', at + 4);
    if (end === -1) return false;
    at = skipWhitespace(head, end + 3);
  }
  return /^<(!doctype\s+html|html[\s>])/i.test(head.slice(at));
}

function skipWhitespace(text: string, from: number): number {
  let at = from;
  while (at < text.length && /\s/.test(text[at])) at++;
  return at;
}
