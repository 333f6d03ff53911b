// Validates a JUnit report against Jenkins xunit's junit-10.xsd (test/fixtures/junit-10.xsd), with xmllint
// (Debian's libxml2-utils, which .ci/run installs). A missing xmllint fails the test: it never skips.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

export const JUNIT_XSD = join(import.meta.dirname, '..', 'fixtures', 'junit-10.xsd');

/** `ok` when xmllint validates `xml` against junit-10.xsd; `output` says why not. */
export function validateJunit(xml: string): { ok: boolean; output: string } {
  const r = spawnSync('xmllint', ['--noout', '--schema', JUNIT_XSD, '-'], { input: xml, encoding: 'utf8' });
  if (r.error) throw new Error(`xmllint could not run (${r.error.message}): install libxml2-utils, as .ci/run does`);
  return { ok: r.status === 0, output: `${r.stdout}${r.stderr}` };
}
