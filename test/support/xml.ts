// A strict, self-contained XML 1.0 well-formedness check (no XML parser is a dependency: xmlbuilder, which
// which junit-report-builder once brought, only writes XML): it parses the document into a tree, and throws on anything a
// conforming parser must reject that a serializer could produce.

export interface XmlElement {
  name: string;
  attrs: Record<string, string>;
  children: XmlElement[];
  /** Character data and CDATA of this element (not of its children), decoded. */
  text: string;
}

const NAME_START = 'A-Za-z_:\\u00C0-\\u00D6\\u00D8-\\u00F6\\u00F8-\\u02FF\\u0370-\\u037D\\u037F-\\u1FFF\\u200C\\u200D\\u2070-\\u218F\\u2C00-\\u2FEF\\u3001-\\uD7FF\\uF900-\\uFDCF\\uFDF0-\\uFFFD';
const NAME = new RegExp(`[${NAME_START}][${NAME_START}\\-.0-9\\u00B7\\u0300-\\u036F\\u203F-\\u2040]*`, 'y');
const XML_DECLARATION = /^<\?xml\s+version\s*=\s*(["'])1\.[0-9]+\1(\s+encoding\s*=\s*(["'])[A-Za-z][A-Za-z0-9._-]*\3)?(\s+standalone\s*=\s*(["'])(yes|no)\5)?\s*\?>$/;
const NAMED_ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };
/** A code point XML 1.0 allows. */
const legal = (cp: number): boolean => cp === 0x9 || cp === 0xa || cp === 0xd || (cp >= 0x20 && cp <= 0xd7ff) || (cp >= 0xe000 && cp <= 0xfffd) || (cp >= 0x10000 && cp <= 0x10ffff);

/** One pass over a document, from its first character to its last: each method reads one production at `i`. */
class XmlReader {
  private i = 0;

  constructor(private readonly doc: string) {
    for (const ch of doc) if (!legal(ch.codePointAt(0)!)) this.fail(`illegal character U+${ch.codePointAt(0)!.toString(16).padStart(4, '0')}`);
  }

  /** The document: an optional BOM and XML declaration, then one root element among comments and PIs. */
  document(): XmlElement {
    if (this.doc.charCodeAt(0) === 0xfeff) this.i = 1;
    if (this.at('<?xml')) {
      const end = this.doc.indexOf('?>', this.i);
      if (end < 0) this.fail('unterminated XML declaration');
      if (!XML_DECLARATION.test(this.doc.slice(this.i, end + 2))) this.fail('bad XML declaration');
      this.i = end + 2;
    }
    this.misc();
    if (!this.at('<')) this.fail('expected the root element');
    const rootElement = this.element();
    this.misc();
    if (this.i !== this.doc.length) this.fail('content after the root element');
    return rootElement;
  }

  private fail(why: string): never {
    const line = this.doc.slice(0, this.i).split('\n').length;
    throw new Error(`not well-formed XML at offset ${this.i} (line ${line}): ${why}: ${JSON.stringify(this.doc.slice(this.i, this.i + 40))}`);
  }

  private at(s: string): boolean {
    return this.doc.startsWith(s, this.i);
  }

  private expect(s: string): void {
    if (!this.at(s)) this.fail(`expected ${JSON.stringify(s)}`);
    this.i += s.length;
  }

  private space(): void {
    while (this.i < this.doc.length && ' \t\r\n'.includes(this.doc[this.i]!)) this.i++;
  }

  private name(): string {
    NAME.lastIndex = this.i;
    const m = NAME.exec(this.doc);
    if (!m) return this.fail('expected a name');
    this.i += m[0].length;
    return m[0];
  }

  private reference(): string {
    this.expect('&');
    const end = this.doc.indexOf(';', this.i);
    if (end < 0) this.fail('unterminated reference');
    const ref = this.doc.slice(this.i, end);
    this.i = end + 1;
    if (ref in NAMED_ENTITIES) return NAMED_ENTITIES[ref]!;
    const m = /^#(?:x([0-9a-fA-F]+)|([0-9]+))$/.exec(ref);
    if (!m) return this.fail(`unknown entity &${ref};`);
    const cp = m[1] !== undefined ? Number.parseInt(m[1], 16) : Number.parseInt(m[2]!, 10);
    if (!legal(cp)) this.fail(`character reference to an illegal character &${ref};`);
    return String.fromCodePoint(cp);
  }

  private comment(): void {
    this.expect('<!--');
    const end = this.doc.indexOf('-->', this.i);
    if (end < 0) this.fail('unterminated comment');
    if (this.doc.slice(this.i, end).includes('--') || this.doc[end - 1] === '-') this.fail('"--" in a comment');
    this.i = end + 3;
  }

  private pi(): void {
    this.expect('<?');
    if (/^xml[\s?]/i.test(this.doc.slice(this.i, this.i + 4))) this.fail('an XML declaration is allowed only at the very start');
    this.name();
    const end = this.doc.indexOf('?>', this.i);
    if (end < 0) this.fail('unterminated processing instruction');
    this.i = end + 2;
  }

  /** Comments, processing instructions and white space, outside the root element. */
  private misc(): void {
    for (;;) {
      this.space();
      if (this.at('<!--')) this.comment();
      else if (this.at('<?')) this.pi();
      else return;
    }
  }

  private element(): XmlElement {
    this.expect('<');
    const e: XmlElement = { name: this.name(), attrs: {}, children: [], text: '' };
    if (this.attributes(e)) this.content(e);
    return e;
  }

  /** The start tag's attributes, into `e.attrs`, up to its end: whether content follows (`>`, not `/>`). */
  private attributes(e: XmlElement): boolean {
    for (;;) {
      const before = this.i;
      this.space();
      if (this.at('/>')) {
        this.i += 2;
        return false;
      }
      if (this.at('>')) {
        this.i += 1;
        return true;
      }
      if (this.i === before) this.fail('expected white space before an attribute');
      const attr = this.name();
      if (attr in e.attrs) this.fail(`duplicate attribute ${attr}`);
      this.space();
      this.expect('=');
      this.space();
      e.attrs[attr] = this.attributeValue();
    }
  }

  /** A quoted attribute value, its references decoded and its white space normalized. */
  private attributeValue(): string {
    const quote = this.doc[this.i];
    if (quote !== '"' && quote !== "'") this.fail('attribute value not quoted');
    this.i++;
    let value = '';
    while (this.doc[this.i] !== quote) {
      if (this.i >= this.doc.length) this.fail('unterminated attribute value');
      const c = this.doc[this.i]!;
      if (c === '<') this.fail('"<" in an attribute value');
      if (c === '&') value += this.reference();
      else {
        value += ' \t\r\n'.includes(c) && c !== ' ' ? ' ' : c; // attribute-value normalization
        this.i++;
      }
    }
    this.i++;
    return value;
  }

  /** The element's content, up to and with its end tag: text and CDATA into `e.text`, elements into `e.children`. */
  private content(e: XmlElement): void {
    for (;;) {
      if (this.i >= this.doc.length) this.fail(`element <${e.name}> not closed`);
      if (this.at('</')) {
        this.i += 2;
        const closing = this.name();
        if (closing !== e.name) this.fail(`</${closing}> closes <${e.name}>`);
        this.space();
        this.expect('>');
        return;
      }
      if (this.at('<![CDATA[')) {
        this.i += 9;
        const end = this.doc.indexOf(']]>', this.i);
        if (end < 0) this.fail('unterminated CDATA section');
        e.text += this.doc.slice(this.i, end);
        this.i = end + 3;
      } else if (this.at('<!--')) this.comment();
      else if (this.at('<?')) this.pi();
      else if (this.at('<')) e.children.push(this.element());
      else if (this.at('&')) e.text += this.reference();
      else {
        if (this.at(']]>')) this.fail('"]]>" in character data');
        e.text += this.doc[this.i];
        this.i++;
      }
    }
  }
}

/** The document's root element, or an error naming where and why it is not well-formed. */
export function parseXml(doc: string): XmlElement {
  return new XmlReader(doc).document();
}

/** `e` and every element under it named `name`, in document order. */
export const allElements = (e: XmlElement, name: string): XmlElement[] => [...(e.name === name ? [e] : []), ...e.children.flatMap((c) => allElements(c, name))];

/** The first child of `e` named `name`. */
export const childElement = (e: XmlElement, name: string): XmlElement | undefined => e.children.find((c) => c.name === name);
