// The results page (reporters/results-page.ts): built from real results (the H200's, and the fixtures of runs against
// the driver double) and synthetic runs of other driver versions with other speeds, then
// checked as text (self-contained: nothing it could fetch, no script) and rendered in a real browser (Debian's
// Chromium through playwright-core) with every request blocked: no request may be attempted, the screenshot
// must be a real picture, and every number the table and the charts show must be the JSON's, to 2 decimals.
// Chromium or playwright-core missing is a failure, never a skip.
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type Browser, type BrowserContext, type Locator, type Page, chromium } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import type { CheckResult, DeviceResult, RunResult } from '../results/types.js';
import { escapeHtml } from '../reporters/html-page.js';
import { htmlReport } from '../reporters/results-page.js';
import { compareVersions } from '../results/versions.js';

const root = resolve(import.meta.dirname, '..');
const CHROMIUM = '/usr/bin/chromium';
const work = mkdtempSync(join(tmpdir(), 'mapped-reg-html-'));

const h200 = JSON.parse(readFileSync(join(root, 'test', 'fixtures', 'h200.json'), 'utf8')) as RunResult;
const FIXTURES = ['cuda.json', 'rocm724.json', 'rocm-fixed.json', 'cuda-wrong-bytes.json'];
// a fixture that is missing fails the file: the page is not checked on less than it says
const fixtures = FIXTURES.map((f) => JSON.parse(readFileSync(join(root, 'test', 'fixtures', f), 'utf8')) as RunResult);

const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x)) as T;
const check = (id: string, status: CheckResult['status']): CheckResult => ({ id, suite: id.startsWith('hazard.') ? 'hazards' : 'probe', title: id, status, durationMs: 1 });

/** The H200 run again, as if with another CUDA driver, at another time, with other speeds. */
function h200With(version: string, startedAt: string, registered: number, staged: number, edit?: (d: DeviceResult) => void): RunResult {
  const r = clone(h200);
  r.startedAt = startedAt;
  r.finishedAt = startedAt;
  const d = r.devices.find((x) => x.id === 'cuda:0')!;
  d.driver.version = version;
  d.timing = { ...d.timing!, registeredGBps: registered, stagedGBps: staged, ratio: registered / staged };
  edit?.(d);
  return r;
}

/** A HIP device (name from a driver that puts markup in it) through several ROCm versions, one without timing. */
function hipRun(version: string, startedAt: string, timing: [number, number] | undefined, statuses: CheckResult['status'][]): RunResult {
  const d: DeviceResult = {
    id: 'hip:0',
    backend: 'hip',
    name: `Radeon <RX> 7900 "XTX" & <script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">`,
    pciBusId: '0000:03:00.0',
    driver: { name: 'HIP', version },
    integrated: false,
    staticVerdict: 'Self_test_required',
    verdict: timing ? { kind: 'Refused', refusal: 'Wrong_bytes', text: 'Refused (Wrong_bytes)' } : { kind: 'Inconclusive', reason: 'probe crashed', text: 'Inconclusive (probe.verdict crash)' },
    cacheable: false,
    checks: statuses.map((s, i) => check(i === 0 ? 'probe.verdict' : `hazard.check_${i}_${s}`, s)),
    ...(timing ? { timing: { registeredGBps: timing[0], stagedGBps: timing[1], ratio: timing[0] / timing[1], minRelativeSpeed: 0.8, runs: 7, bytes: 1 << 27 } } : {}),
    scratch: { dir: '/tmp', fsType: 'ext4' },
  };
  return {
    schemaVersion: 1,
    tool: { name: 'mapped-reg-conformance', version: '0.1.0' },
    host: { hostname: 'vm', kernel: '6.1', platform: 'linux-x64' },
    startedAt,
    finishedAt: startedAt,
    options: {},
    backends: [],
    gpuDriverFound: true,
    devices: [d],
  };
}

// An older file: no verdict text, no staticVerdict, no backends, no ratio.
const old = clone(h200With('12.8 (kernel module 570.86.10)', '2026-06-01T09:00:00.000Z', 48.123, 5.987)) as unknown as Record<string, unknown>;
delete old.backends;
delete old.gpuDriverFound;
for (const d of old.devices as Record<string, unknown>[]) {
  delete d.staticVerdict;
  delete (d.verdict as Record<string, unknown>).text;
  if (d.timing) delete (d.timing as Record<string, unknown>).ratio;
}

const results: RunResult[] = [
  h200,
  h200With('13.1 (kernel module 590.44.01)', '2026-12-10T08:00:00.000Z', 56.789, 5.1234),
  // the same driver again, later, with a crashed check and a slower registered copy
  h200With('13.0 (kernel module 580.159.04)', '2026-12-01T10:30:00.000Z', 3.3333, 5.6789, (d) => {
    d.verdict = { kind: 'Too_slow', reason: 'registered 3.33 GB/s', text: 'Too_slow (registered 3.33 GB/s)' };
    d.checks[3] = check('timing.margin', 'fail');
    d.checks[6] = check('hazard.readonly_mapping', 'crash');
  }),
  old as unknown as RunResult,
  hipRun('7.2.10', '2026-10-05T00:00:00.000Z', [2.5, 12.25], ['fail', 'pass', 'timeout', 'warn', 'skip']),
  hipRun('7.2.4', '2026-10-09T00:00:00.000Z', [24.681, 12.345], ['fail', 'crash', 'pass']),
  hipRun('7.2.9', '2026-10-07T00:00:00.000Z', undefined, ['crash']),
  ...fixtures,
];

// ---------------------------------------------------------------------------------------------------------------
// What the page must show, worked out here from the JSON (not from the reporter's own grouping).

interface Expected {
  /** The device's heading in the table: name, then backend · PCI bus id (else device id) [· host, when several]. */
  header: string;
  rows: { version: string; registered: string; staged: string; ratio: string; counts: Record<CheckResult['status'], number>; failing: string[]; regressed: string[] }[];
}

const f2 = (x: number | undefined): string => (x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(2));
const STATUSES: CheckResult['status'][] = ['pass', 'warn', 'fail', 'timeout', 'crash', 'error', 'skip'];
const RANK: Partial<Record<CheckResult['status'], number>> = { pass: 0, warn: 1, fail: 2, timeout: 3, crash: 4 };

/** The checks of `now` whose status got more severe since `before` (or that fail where `before` had no result). */
function regressedChecks(before: DeviceResult | undefined, now: DeviceResult): string[] {
  if (!before) return [];
  const was = new Map(before.checks.map((c) => [c.id, RANK[c.status]]));
  return now.checks.filter((c) => {
    const n = RANK[c.status];
    const o = was.get(c.id);
    return n !== undefined && (o === undefined ? n >= 2 : n > o);
  }).map((c) => c.id);
}

/** Every driver version of `results`, oldest first, in the order written here by hand (not by the reporter's compareVersions). */
const VERSION_ORDER = [
  '12.8 (kernel module 570.86.10)',
  '13.0',
  '13.0 (kernel module 580.159.04)',
  '13.1 (kernel module 590.44.01)',
  '7.2.4',
  '7.2.9',
  '7.2.10',
  '7.2.4000',
  '7.2.5000',
  // the H200 run's other devices: the same version in every copy of it
  '5.0+debian',
  '580.159.04',
  'Linux 6.18.44-fc-v657-gpu',
];
function versionRank(v: string): number {
  const i = VERSION_ORDER.indexOf(v);
  // one device's versions only ever meet each other; a version not listed here is a test to update
  if (i < 0) throw new Error(`driver version ${JSON.stringify(v)} is not in VERSION_ORDER`);
  return i;
}

function expected(rs: RunResult[]): Map<string, Expected> {
  const several = new Set(rs.map((r) => r.host.hostname)).size > 1;
  const byDevice = new Map<string, { r: RunResult; d: DeviceResult }[]>();
  for (const r of rs) {
    for (const d of r.devices) {
      const header = `${d.name} ${[d.backend, d.pciBusId ?? d.id, ...(several ? [`host ${r.host.hostname}`] : [])].join(' · ')}`;
      byDevice.set(header, [...(byDevice.get(header) ?? []), { r, d }]);
    }
  }
  const out = new Map<string, Expected>();
  for (const [header, list] of byDevice) {
    list.sort((a, b) => versionRank(a.d.driver.version) - versionRank(b.d.driver.version) || Date.parse(a.r.startedAt) - Date.parse(b.r.startedAt));
    out.set(header, {
      header,
      rows: list.map(({ d }, i) => {
        const t = d.timing;
        const ratio = t ? (t.ratio ?? t.registeredGBps / t.stagedGBps) : undefined;
        return {
          version: d.driver.version,
          registered: f2(t?.registeredGBps),
          staged: f2(t?.stagedGBps),
          ratio: f2(ratio),
          counts: Object.fromEntries(STATUSES.map((s) => [s, d.checks.filter((c) => c.status === s).length])) as Record<CheckResult['status'], number>,
          failing: d.checks.filter((c) => ['fail', 'timeout', 'crash', 'error'].includes(c.status)).map((c) => c.id),
          regressed: regressedChecks(list[i - 1]?.d, d),
        };
      }),
    });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------

describe('compareVersions', () => {
  it('orders numbers as numbers and text as text', () => {
    const sorted = ['7.2.10', '13.1', '7.2.4', '13.0 (kernel module 580.159.04)', '7.2', '13.0', '7.10.0', '7.2.4-rc1', '6.4.3'].sort(compareVersions);
    expect(sorted).toEqual(['6.4.3', '7.2', '7.2.4', '7.2.4-rc1', '7.2.10', '7.10.0', '13.0', '13.0 (kernel module 580.159.04)', '13.1']);
    expect(compareVersions('13.0 (kernel module 580.159.04)', '13.0 (kernel module 580.65.06)')).toBeGreaterThan(0);
    expect(compareVersions('99999999999999999999.1', '99999999999999999998.2')).toBeGreaterThan(0);
    expect(compareVersions('7.2.4', '7.2.4')).toBe(0);
  });
});

describe('htmlReport as text', () => {
  const page = htmlReport(results, { title: 'History <of> "drivers"' });

  it('references nothing outside the page and has no script', () => {
    expect(page).toMatch(/^<!DOCTYPE html>/);
    expect(page).not.toMatch(/https?:/i);
    expect(page).not.toMatch(/<script/i);
    expect(page).not.toMatch(/<(link|iframe|object|embed|img|image|use|audio|video|source|base|form)\b/i);
    // in the markup (text is escaped: a `<` in text is `&lt;`), no attribute that could name a resource
    const tags = page.match(/<[a-zA-Z][^>]*>/g) ?? [];
    expect(tags.length).toBeGreaterThan(100);
    expect(tags.filter((t) => /\s(src|href|srcset|action|poster|data|xlink:href|background|ping)\s*=/i.test(t.replace(/"[^"]*"/g, '""')))).toEqual([]);
    expect(page).not.toMatch(/url\s*\(|@import|@font-face/i);
    expect(page).not.toContain('//');
    expect(page).toContain(`<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">`);
  });

  it('escapes every text from the results', () => {
    expect(page).toContain('Radeon &lt;RX&gt; 7900 &quot;XTX&quot; &amp; &lt;script&gt;');
    expect(page).toContain('<title>History &lt;of&gt; &quot;drivers&quot;</title>');
    expect(escapeHtml('a\u0000b\u0007<\'>\uD800')).toBe('a\uFFFDb\uFFFD&lt;&#39;&gt;\uFFFD');
  });

  it('names the host only when the results come from several hosts', () => {
    const one = htmlReport([h200]);
    expect(one).not.toContain('host vm');
    const other = clone(h200);
    other.host.hostname = 'gpu-box-2';
    const two = htmlReport([h200, other]);
    expect(two).toContain('host vm');
    expect(two).toContain('host gpu-box-2');
    // the same device on two hosts is two devices
    expect(two.match(/<tbody class="device"/g)).toHaveLength(2 * h200.devices.length);
  });

  it('says so when there is nothing to show', () => {
    expect(htmlReport([])).toContain('No device in these results.');
  });
});

// ---------------------------------------------------------------------------------------------------------------
// The page in a browser.

let launched: Promise<Browser> | undefined;
/** The browser, launched by the first test that needs it: a missing browser fails each test, never skips it. */
const browser = (): Promise<Browser> =>
  (launched ??= (async () => {
    expect(existsSync(CHROMIUM), `${CHROMIUM} is missing: install Debian's chromium package`).toBe(true);
    return chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  })());

/** The page at `url`, loaded offline, with every request other than the page's own blocked and recorded, and every console problem. */
async function openOffline(url: string): Promise<{ context: BrowserContext; page: Page; requests: string[]; blocked: string[]; problems: string[] }> {
  const context = await (await browser()).newContext({ viewport: { width: 1280, height: 900 }, offline: true, javaScriptEnabled: true });
  const page = await context.newPage();
  const requests: string[] = [];
  const blocked: string[] = [];
  const problems: string[] = [];
  page.on('request', (r) => requests.push(r.url()));
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(String(e)));
  await page.route('**', async (r) => {
    if (r.request().url() === url) return r.continue();
    blocked.push(r.request().url());
    return r.abort();
  });
  await page.goto(url, { waitUntil: 'load' });
  await page.waitForLoadState('networkidle');
  return { context, page, requests, blocked, problems };
}

/** Each device's table rows and charts on the page against what the JSON says they must show. */
async function expectEveryDeviceShown(page: Page, want: Map<string, Expected>): Promise<void> {
  const groups = page.locator('tbody.device');
  expect(await groups.count()).toBe(want.size);
  const headers = (await groups.locator('th.device').allInnerTexts()).map((h) => h.trim());
  expect(headers.slice().sort()).toEqual([...want.keys()].sort());
  for (let gi = 0; gi < headers.length; gi++) {
    const group = groups.nth(gi);
    const header = headers[gi]!;
    const e = want.get(header)!;
    await expectTableRows(group, header, e);
    const section = page.locator(`section.device-charts[data-device="${await group.getAttribute('data-device')}"]`);
    await expectCharts(section, e);
  }
}

/** The table: one row per run, in version order, with the JSON's numbers and statuses. */
async function expectTableRows(group: Locator, header: string, e: Expected): Promise<void> {
  const rows = group.locator('tr.entry');
  expect(await rows.count()).toBe(e.rows.length);
  for (let i = 0; i < e.rows.length; i++) {
    const row = rows.nth(i);
    const x = e.rows[i]!;
    expect(await row.locator('td.driver').innerText()).toContain(x.version);
    // the figure, and under it the drop when it is a regression
    expect((await row.locator('td.registered').innerText()).split('\n')[0]).toBe(x.registered);
    expect(await row.locator('td.staged').innerText()).toBe(x.staged);
    expect(await row.locator('td.ratio').innerText()).toBe(x.ratio);
    for (const s of STATUSES) expect(Number(await row.locator(`td.s-${s}`).innerText()), `${header} ${x.version} ${s}`).toBe(x.counts[s]);
    const failing = await row.locator('td.failing').innerText();
    for (const id of x.failing) expect(failing).toContain(id);
    // a check that got worse since the run above is marked, failing or not
    expect((await row.locator('td.failing .check.regressed code').allInnerTexts()).map((t) => t.replace(/\s/g, '')).sort()).toEqual([...x.regressed].sort());
    if (x.failing.length === 0 && x.regressed.length === 0) expect(failing).toBe('none');
  }
}

/**
 * The charts (of a device measured at least once): a place per run, in the same order, each value written as text,
 * a run that measured nothing a gap; none for a device never measured.
 */
async function expectCharts(section: Locator, e: Expected): Promise<void> {
  const timed = e.rows;
  if (timed.every((r) => r.registered === '-' && r.staged === '-' && r.ratio === '-')) {
    expect(await section.count()).toBe(0);
    return;
  }
  const svgText = async (chart: string, series: string): Promise<string[]> =>
    section.locator(`svg[id$="-${chart}"] text.value[data-series="${series}"]`).evaluateAll((els) => els.map((el) => `${el.getAttribute('data-index')}:${el.textContent}`));
  const want_ = (f: (r: (typeof timed)[number]) => string): string[] => timed.flatMap((r, i) => (f(r) === '-' ? [] : [`${i}:${f(r)}`]));
  expect(await svgText('gbps', 'registered')).toEqual(want_((r) => r.registered));
  expect(await svgText('gbps', 'staged')).toEqual(want_((r) => r.staged));
  expect(await svgText('ratio', 'ratio')).toEqual(want_((r) => r.ratio));
  // x labels in the same (natural) order
  const labels = await section.locator('svg[id$="-gbps"] text.xlabel:not(.sub)').allTextContents();
  expect(labels).toHaveLength(timed.length);
  timed.forEach((r, i) => expect(r.version.startsWith(labels[i]!), `${labels[i]} for ${r.version}`).toBe(true));
  // accessible: each chart names itself
  for (const svg of await section.locator('svg.chart').all()) {
    expect(await svg.getAttribute('role')).toBe('img');
    const [titleId] = (await svg.getAttribute('aria-labelledby'))!.split(' ');
    expect((await svg.locator(`title#${titleId}`).textContent())!.length).toBeGreaterThan(20);
  }
}

/** The runs of `results` in natural version order, the H200's regression marked, the HIP device's unmeasured run a gap. */
async function expectOrderAndMarks(page: Page): Promise<void> {
  // versions in natural order: 7.2.4 < 7.2.9 < 7.2.10, and the two runs of CUDA 13.0 by time
  const hip = page.locator('tbody.device', { hasText: 'Radeon <RX> 7900' });
  expect((await hip.locator('td.driver').allInnerTexts()).map((t) => t.split('\n')[0])).toEqual(['HIP 7.2.4', 'HIP 7.2.9', 'HIP 7.2.10']);
  const cuda = page.locator('tbody.device', { hasText: 'cuda · 0000:00:06.0' });
  const cudaRows = await cuda.locator('tr.entry').evaluateAll((els) => els.map((el) => el.getAttribute('data-version')));
  expect(cudaRows).toEqual(['12.8 (kernel module 570.86.10)', '13.0 (kernel module 580.159.04)', '13.0 (kernel module 580.159.04)', '13.1 (kernel module 590.44.01)']);
  expect((await cuda.locator('tr.entry td.registered').allInnerTexts()).map((t) => t.split('\n')[0])).toEqual(['48.12', '54.97', '3.33', '56.79']);
  // 54.97 -> 3.33 GB/s with the same driver: a regression of the figure, marked in the table and on the chart
  expect(await cuda.locator('tr.entry.regressed').evaluateAll((els) => els.map((el) => el.getAttribute('data-index')))).toEqual(['2']);
  expect(await cuda.locator('tr.entry').nth(2).locator('td.registered .regression-mark').innerText()).toBe('▼ 93.9%');
  expect(await cuda.locator('tr.entry').nth(2).locator('td.verdict').innerText()).toContain('was Usable');
  const cudaCharts = page.locator('section.device-charts', { hasText: 'cuda · 0000:00:06.0' });
  expect(await cudaCharts.locator('svg[id$="-gbps"] circle.regressed-ring').evaluateAll((els) => els.map((el) => el.getAttribute('data-index')))).toEqual(['2']);
  expect(await cudaCharts.locator('svg[id$="-gbps"] text.value.regressed').allTextContents()).toEqual(['3.33']);

  // a run that measured nothing is a gap in the charts, said in words
  const hipCharts = page.locator('section.device-charts', { hasText: 'Radeon <RX> 7900' });
  expect(await hipCharts.locator('svg[id$="-gbps"] text.xlabel').allTextContents()).toEqual(['7.2.4', '7.2.9', '7.2.10']);
  expect(await hipCharts.locator('svg[id$="-gbps"] text.missing').allTextContents()).toEqual(['not measured']);
}

/** Text is drawn (a font is there): the heading's pixels change when its text is made transparent. */
async function expectTextDrawn(page: Page): Promise<void> {
  const heading = page.locator('h1');
  const withText = await heading.screenshot();
  await heading.evaluate((el) => el.setAttribute('style', 'color: transparent'));
  const withoutText = await heading.screenshot();
  await heading.evaluate((el) => el.removeAttribute('style'));
  expect(withText.equals(withoutText)).toBe(false);
  expect(withText.length).toBeGreaterThan(withoutText.length + 1000);
}

/** The picture of the whole page, into `shot`: a real PNG as wide as the window and as tall as the page. */
async function expectScreenshot(page: Page, shot: string): Promise<void> {
  await page.screenshot({ path: shot, fullPage: true });
  const png = readFileSync(shot);
  expect(png.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))).toBe(true);
  expect(png.subarray(12, 16).toString('latin1')).toBe('IHDR');
  const width = png.readUInt32BE(16);
  const height = png.readUInt32BE(20);
  const pageHeight = await page.evaluate('document.documentElement.scrollHeight');
  expect(width).toBe(1280);
  expect(height).toBe(pageHeight);
  expect(height).toBeGreaterThan(900);
  expect(statSync(shot).size).toBeGreaterThan(60_000);
  expect(readdirSync(work)).toContain('report.png');
}

/** The newest five of a chart's values inside its visible box and the window as the page opens, and no two neighbours overlapping. */
async function expectNewestSeenAndApart(chart: Locator): Promise<void> {
  const values = await chart.locator('text.value[data-series="registered"]').evaluateAll((els) =>
    els.map((el) => {
      const r = el.getBoundingClientRect();
      return { i: Number(el.getAttribute('data-index')), left: r.left, right: r.right, top: r.top, bottom: r.bottom, text: el.textContent };
    }),
  );
  expect(values).toHaveLength(32);
  const box = await chart.evaluate((el) => {
    const r = el.parentElement!.getBoundingClientRect();
    return { left: r.left, right: r.right };
  });
  for (const v of values.slice(-5)) {
    expect(v.left, `run ${v.i}`).toBeGreaterThanOrEqual(box.left);
    expect(v.right, `run ${v.i}`).toBeLessThanOrEqual(Math.min(box.right, 1280));
  }
  for (let k = 1; k < values.length; k++) {
    const [a, b] = [values[k - 1]!, values[k]!];
    const apart = a.right <= b.left || b.right <= a.left || a.bottom <= b.top || b.bottom <= a.top;
    expect(apart, `${a.text} at ${a.i} and ${b.text} at ${b.i}`).toBe(true);
  }
}

describe('htmlReport in Chromium, offline', () => {
  const file = join(work, 'report.html');
  const shot = join(work, 'report.png');

  afterAll(async () => {
    await (await launched?.catch(() => undefined))?.close();
    if (process.env.MAPPED_REG_KEEP_HTML) console.log(`html report and screenshot kept in ${work}`);
    else rmSync(work, { recursive: true, force: true });
  });

  it('sees a request when a page makes one (the control of the next test)', async () => {
    const context = await (await browser()).newContext({ offline: true });
    const page = await context.newPage();
    const blocked: string[] = [];
    await page.route('**', async (r) => {
      blocked.push(r.request().url());
      return r.abort();
    });
    // .invalid never resolves, and the route aborts the request before any lookup
    await page.setContent('<p>control</p><img src="http://blocked.invalid/x.png">', { waitUntil: 'load' });
    await context.close();
    expect(blocked).toEqual(['http://blocked.invalid/x.png']);
  }, 60_000);

  it('loads with no request attempted, shows text, and every number is the JSON one', async () => {
    writeFileSync(file, htmlReport(results));
    const url = pathToFileURL(file).href;
    const { context, page, requests, blocked, problems } = await openOffline(url);
    expect(blocked).toEqual([]);
    expect(requests.filter((u) => u !== url)).toEqual([]);
    expect(problems).toEqual([]);
    // the markup in a device name stayed text
    expect(await page.evaluate('globalThis.__pwned')).toBeUndefined();
    expect(await page.locator('img, script').count()).toBe(0);

    await expectEveryDeviceShown(page, expected(results));
    await expectOrderAndMarks(page);
    await expectTextDrawn(page);
    await expectScreenshot(page, shot);
    await context.close();
    expect(blocked).toEqual([]);
  }, 60_000);

  it('32 runs of one GPU: the newest are seen without scrolling, values do not overlap, regressions are marked where they happen', async () => {
    // CUDA 13.0.0 ... 13.0.31; the registered copy falls 25% at run 20 (then recovers), a hazard check fails from run 25
    const runs = Array.from({ length: 32 }, (_, i) =>
      h200With(`13.0.${i}`, new Date(Date.UTC(2026, 0, 1 + i)).toISOString(), i === 20 ? 41.25 : 55 + (i % 3) * 0.1, 5 + (i % 4) * 0.2, (d) => {
        if (i >= 25) d.checks.find((c) => c.id === 'hazard.tmpfs_bytes')!.status = 'fail';
      }),
    );
    const many = join(work, 'many.html');
    writeFileSync(many, htmlReport(runs));
    const context = await (await browser()).newContext({ viewport: { width: 1280, height: 900 }, offline: true });
    const page = await context.newPage();
    await page.goto(pathToFileURL(many).href, { waitUntil: 'load' });
    // the page itself does not scroll sideways: only a chart wider than it does
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBe(1280);
    const chart = page.locator('section.device-charts', { hasText: 'cuda · 0000:00:06.0' }).locator('svg[id$="-gbps"]');
    await expectNewestSeenAndApart(chart);
    // the drop at run 20 (25%, more than the 10% allowed) and the failing check from run 25 are marked
    expect(await chart.locator('circle.regressed-ring').evaluateAll((els) => els.map((el) => el.getAttribute('data-index')))).toEqual(['20']);
    const rows = page.locator('tbody.device', { hasText: 'cuda · 0000:00:06.0' }).locator('tr.entry');
    expect(await page.locator('tbody.device', { hasText: 'cuda · 0000:00:06.0' }).locator('tr.entry.regressed').evaluateAll((els) => els.map((el) => el.getAttribute('data-index')))).toEqual(['20', '25']);
    expect(await rows.nth(20).locator('td.registered .regression-mark').innerText()).toMatch(/^▼ 25\.\d%$/);
    expect(await rows.nth(25).locator('td.failing .check.regressed').innerText()).toMatch(/^hazard\.tmpfs_bytes\s*▲ was pass$/);
    expect(await rows.nth(26).locator('.regressed').count()).toBe(0);
    await page.screenshot({ path: join(work, 'many.png') });
    await context.close();
  }, 60_000);
});
