// The JUnit report of a run (what CI reads of it: docs/ci.md), written with xmlbuilder2 from the report's data
// (reporters/junit-cases.ts: which testsuites and testcases there are, and how each ends), valid against Jenkins
// xunit's junit-10.xsd: `tests`, `failures`, `errors`, `skipped` and `time` on every <testsuite>, `tests`,
// `failures`, `errors` and `time` on <testsuites> (the XSD has no `skipped` there).
//
// Every string is made safe for XML 1.0 here, before the writer sees it: characters XML cannot carry (C0 controls
// other than tab, newline and carriage return, lone surrogates, U+FFFE/U+FFFF) are written visibly (`\x07`) or
// as U+FFFD. Text is written as character data, escaped by the writer, so that `]]>`, `<`, `&` and non-ASCII come
// back exact from any XML parser.
import { create } from 'xmlbuilder2';
import type { RunResult } from '../results/types.js';
import { type JunitCase, type JunitSuite, type RunEnd, allCases, junitCases, junitTotals } from './junit-cases.js';

export type { RunEnd } from './junit-cases.js';

/** C0 controls XML 1.0 does not allow (tab, LF and CR are allowed). */
const CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F]/g;
/** Code units that are not characters: lone surrogates, U+FFFE, U+FFFF. */
const NOT_A_CHAR = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]|[\uFFFE\uFFFF]/g;

/** `s` with only characters XML 1.0 allows: a control character as `\xNN`, anything else not a character as U+FFFD. */
export function xmlSafe(s: string): string {
  return s.replace(CONTROL, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`).replace(NOT_A_CHAR, '\uFFFD');
}

/** A count or a time as an attribute. */
const n = (x: number): string => String(x);

type Element = ReturnType<ReturnType<typeof create>['ele']>;

function writeCase(parent: Element, c: JunitCase): void {
  const tc = parent.ele('testcase', { classname: xmlSafe(c.classname), name: xmlSafe(c.name), time: n(c.time) });
  const o = c.outcome;
  if (o) {
    const e = tc.ele(o.element, { message: xmlSafe(o.message), ...(o.type !== undefined ? { type: xmlSafe(o.type) } : {}) });
    if (o.body) e.txt(xmlSafe(o.body));
  }
  if (c.out) tc.ele('system-out').txt(xmlSafe(c.out));
}

function writeSuite(parent: Element, s: JunitSuite): void {
  const t = junitTotals(s.cases);
  const suite = parent.ele('testsuite', {
    name: xmlSafe(s.name),
    tests: n(t.tests),
    failures: n(t.failures),
    errors: n(t.errors),
    skipped: n(t.skipped),
    time: n(s.time),
    timestamp: xmlSafe(s.timestamp),
    hostname: xmlSafe(s.hostname),
  });
  if (s.properties.length) {
    const props = suite.ele('properties');
    for (const [name, value] of s.properties) props.ele('property', { name: xmlSafe(name), value: xmlSafe(value) });
  }
  for (const c of s.cases) writeCase(suite, c);
  if (s.out) suite.ele('system-out').txt(xmlSafe(s.out));
}

/**
 * The run as JUnit XML (a string, UTF-8 when written). An interrupted run (incomplete, or stopped by a signal)
 * has an <error type="interrupted"> naming the signal in the `gate` testsuite, counted in the run's errors: a CI
 * view shows it red, never as a green run of fewer tests.
 */
export function junitXml(result: RunResult, run: RunEnd = {}): string {
  const report = junitCases(result, run);
  const t = junitTotals(allCases(report));
  const doc = create({ version: '1.0', encoding: 'UTF-8' });
  const root = doc.ele('testsuites', { name: xmlSafe(report.name), tests: n(t.tests), failures: n(t.failures), errors: n(t.errors), time: n(report.time) });
  for (const s of report.suites) writeSuite(root, s);
  return `${doc.end({ prettyPrint: true })}\n`;
}
