// The JUnit report of a run (what CI reads of it: docs/ci.md), written with fast-xml-parser's XMLBuilder from the report's data
// (reporters/junit-cases.ts: which testsuites and testcases there are, and how each ends), valid against Jenkins
// xunit's junit-10.xsd: `tests`, `failures`, `errors`, `skipped` and `time` on every <testsuite>, `tests`,
// `failures`, `errors` and `time` on <testsuites> (the XSD has no `skipped` there).
//
// Every string is made safe for XML 1.0 here, before the writer sees it: characters XML cannot carry (C0 controls
// other than tab, newline and carriage return, lone surrogates, U+FFFE/U+FFFF) are written visibly (`\x07`) or
// as U+FFFD. Text is written as character data, escaped by the writer, so that `]]>`, `<`, `&`, `&amp;` and
// non-ASCII come back exact from any XML parser (xmlbuilder2 leaves a written `&amp;` as it is: it reads back `&`).
import { XMLBuilder } from 'fast-xml-parser';
import { oneLine } from '../results/format.js';
import type { RunResult } from '../results/types.js';
import { type JunitCase, type JunitReport, type JunitSuite, type RunEnd, allCases, junitCases, junitTotals } from './junit-cases.js';

export type { RunEnd } from './junit-cases.js';

/** C0 controls XML 1.0 does not allow (tab, LF and CR are allowed). */
const CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F]/g;
/** Code units that are not characters: lone surrogates, U+FFFE, U+FFFF. */
const NOT_A_CHAR = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]|[\uFFFE\uFFFF]/g;

/** `s` with only characters XML 1.0 allows: a control character as `\xNN`, anything else not a character as U+FFFD. */
export function xmlSafe(s: string): string {
  return s.replace(CONTROL, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`).replace(NOT_A_CHAR, '\uFFFD');
}

/**
 * An attribute's text: safe, and on one line (an XML parser turns each tab, newline and carriage return of an
 * attribute into a space: a message that spans lines is told whole in its element's text).
 */
const attr = (s: string): string => oneLine(xmlSafe(s));

/** A count or a time as an attribute. */
const n = (x: number): string => String(x);

/** fast-xml-parser's builder: attributes are the keys that start with `@_`, text is `#text`, every `&`, `<`, `>` and quote escaped. */
const writer = new XMLBuilder({ ignoreAttributes: false, attributeNamePrefix: '@_', textNodeName: '#text', format: true, indentBy: '  ', suppressEmptyNode: true, suppressBooleanAttributes: false, processEntities: true });

/** An element of the builder's tree. */
type Node = Record<string, unknown>;

function caseNode(c: JunitCase): Node {
  const tc: Node = { '@_classname': attr(c.classname), '@_name': attr(c.name), '@_time': n(c.time) };
  const o = c.outcome;
  if (o) tc[o.element] = { '@_message': attr(o.message), ...(o.type !== undefined ? { '@_type': attr(o.type) } : {}), ...(o.body ? { '#text': xmlSafe(o.body) } : {}) };
  if (c.out) tc['system-out'] = { '#text': xmlSafe(c.out) };
  return tc;
}

function suiteNode(s: JunitSuite): Node {
  const t = junitTotals(s.cases);
  return {
    '@_name': attr(s.name),
    '@_tests': n(t.tests),
    '@_failures': n(t.failures),
    '@_errors': n(t.errors),
    '@_skipped': n(t.skipped),
    '@_time': n(s.time),
    '@_timestamp': attr(s.timestamp),
    '@_hostname': attr(s.hostname),
    ...(s.properties.length ? { properties: { property: s.properties.map(([name, value]) => ({ '@_name': attr(name), '@_value': attr(value) })) } } : {}),
    ...(s.cases.length ? { testcase: s.cases.map(caseNode) } : {}),
    ...(s.out ? { 'system-out': { '#text': xmlSafe(s.out) } } : {}),
  };
}

/**
 * The run as JUnit XML (a string, UTF-8 when written). An interrupted run (incomplete, or stopped by a signal)
 * has an <error type="interrupted"> naming the signal in the `gate` testsuite, counted in the run's errors: a CI
 * view shows it red, never as a green run of fewer tests.
 */
export function junitXml(result: RunResult, run: RunEnd = {}): string {
  return junitReportXml(junitCases(result, run));
}

/** Any report of testsuites as JUnit XML (the run's, and the runtimes side by side: reporters/runtime-matrix.ts). */
export function junitReportXml(report: JunitReport): string {
  const t = junitTotals(allCases(report));
  const testsuites: Node = { '@_name': attr(report.name), '@_tests': n(t.tests), '@_failures': n(t.failures), '@_errors': n(t.errors), '@_time': n(report.time) };
  if (report.suites.length) testsuites.testsuite = report.suites.map(suiteNode);
  return `<?xml version="1.0" encoding="UTF-8"?>\n${writer.build({ testsuites }) as string}`;
}
