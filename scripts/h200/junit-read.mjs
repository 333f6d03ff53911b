#!/usr/bin/env node
// Reads a run's JUnit report the way CI systems read it, through two XML readers that are not the project's
// (fast-xml-parser, and junit2json's xml2js), and checks it against the totals line the command printed:
//   node scripts/h200/junit-read.mjs REPORT.xml RUN.log
// Prints one line: the totals of each reader and of the log, the red testcases' titles; exits 1 when the readers
// and the log disagree, a suite has no time, or a red testcase's title does not name its device (`<id> > <check>`).
import { readFileSync } from 'node:fs';
import { XMLParser } from 'fast-xml-parser';
import { parse } from 'junit2json';

const [xmlFile, logFile] = process.argv.slice(2);
if (!xmlFile || !logFile) {
  console.error('usage: junit-read.mjs REPORT.xml RUN.log');
  process.exit(2);
}
const problems = [];
let xml = '';
try {
  xml = readFileSync(xmlFile, 'utf8');
} catch {
  problems.push('no report');
}
const line = /^tests: (\d+): (\d+) passed, (\d+) failed, (\d+) errors?, (\d+) skipped/m.exec(readFileSync(logFile, 'utf8'));
const log = line ? line.slice(1).map(Number).join('/') : 'none';
if (!line) problems.push('no totals line in the log');
const list = ['testsuite', 'testcase', 'failure', 'error', 'skipped'];
const doc = xml ? new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '', isArray: (n) => list.includes(n) }).parse(xml) : { testsuites: {} };
const suites = doc.testsuites?.testsuite ?? [];
const cases = suites.flatMap((s) => s.testcase ?? []);
const count = (cs, of) => cs.filter((c) => c[of]).length;
const totals = (cs, f, e, s) => `${cs.length}/${cs.length - f - e - s}/${f}/${e}/${s}`;
const fxp = totals(cases, count(cases, 'failure'), count(cases, 'error'), count(cases, 'skipped'));
const j = xml ? await parse(xml) : {};
const jCases = (j.testsuite ?? []).flatMap((s) => s.testcase ?? []);
const n = (of) => jCases.filter((c) => c[of]?.length).length;
const j2j = totals(jCases, n('failure'), n('error'), n('skipped'));
if (fxp !== log || j2j !== log) problems.push('the readers and the log disagree');
if (xml && !/^\d+(\.\d+)?$/.test(String(doc.testsuites?.time ?? ''))) problems.push('no time on <testsuites>');
for (const s of suites) if (!/^\d+(\.\d+)?$/.test(String(s.time ?? ''))) problems.push(`no time on suite ${s.name}`);
const red = cases.filter((c) => c.failure || c.error).map((c) => c.name);
for (const t of red) if (!/^[\w:.-]+ > [a-z][\w.-]*$/.test(t)) problems.push(`a title without its device: ${t}`);
console.log(`tests/passed/failed/errors/skipped: log ${log}, fast-xml-parser ${fxp}, junit2json ${j2j}; red: ${red.join(', ') || 'none'}${problems.length ? `; PROBLEM: ${problems.join('; ')}` : ''}`);
process.exitCode = problems.length ? 1 : 0;
