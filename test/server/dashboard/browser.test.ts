/**
 * The dashboard in a real browser (headless Chromium): the real CLI serves a policy with tokens
 * and a pseudonym secret, the test signs in through the login form by keyboard, sends traffic so
 * that every panel has data, and reads the page against it: counts, the top offender, a shadow
 * would-refuse, recent refusals, the inspector's answer for a typed key. Screenshots at 1280×800
 * and at phone width go to test-artifacts/dashboard (printed). Neither the page nor its feed may
 * carry an address, header value, token or secret the test used.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { fromAddress, startSluice, type RunningSluice } from '../serve-support.js';
import { artifactsDir, launchChromium, skipUnlessChromium } from './browser-support.js';
import { readFeed, totalOf } from './sse-support.js';
import { NICK, OFFENDER, OTHER, RULES, SHADOWED, sendTraffic } from './traffic-support.js';

const SECRET = 'browser-test-secret-0123456789abcdefgh';
const ADMIN = 'admin-token-browser-0123456789';
const admin = { authorization: `Bearer ${ADMIN}` };

const policy = `version: 1
clients:
  pseudonymSecret: "\${SECRET}"
auth:
  tokens:
    - { token: "${ADMIN}", scopes: [decide, admin] }
${RULES}  - name: uploads
    match: { paths: [/api/uploads] }
    algorithm: token-bucket
    limit: 1
    period: 1s
    burst: 10
  - name: guarded
    match: { paths: [/api/guarded] }
    algorithm: fixed-window
    limit: 1
    window: 1h
    block: { duration: 1h }
`;

/** The Okabe–Ito colours (and black and grey) the page may draw outcomes in. */
const PALETTE = new Set([
  'rgb(0, 114, 178)',
  'rgb(213, 94, 0)',
  'rgb(204, 121, 167)',
  'rgb(0, 158, 115)',
  'rgb(0, 0, 0)',
  'rgb(86, 180, 233)',
  'rgb(230, 159, 0)',
  'rgb(127, 127, 127)',
]);

const skip = skipUnlessChromium();

describe('the dashboard in headless Chromium', { skip }, () => {
  let sluice: RunningSluice;
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];
  const shots = skip === false ? artifactsDir('dashboard') : '';

  before(async () => {
    sluice = await startSluice(policy, [], { SECRET });
    sluice.sensitive(ADMIN, SECRET);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    page.setDefaultTimeout(15_000);
    page.on('pageerror', (error) => errors.push(String(error)));
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });
    await sendTraffic(sluice, admin);
    // Two requests to the guarded rule: the second is refused and locks the address out.
    for (let i = 0; i < 2; i++)
      await sluice.post('/v1/decisions', { items: [fromAddress(OFFENDER, 'GET', '/api/guarded')] }, admin);
    console.log(`dashboard screenshots: ${shots}`);
  });
  after(async () => {
    await browser?.close();
    await sluice?.stop();
  });

  it('signs in through the login form by keyboard alone', async () => {
    await page.goto(`${sluice.url}/dashboard`);
    assert.equal(await page.locator('form[action="/dashboard/login"]').count(), 1);
    // The token field has the focus from the start: type, then Enter submits.
    await page.keyboard.type(ADMIN);
    await page.keyboard.press('Enter');
    await page.waitForSelector('#rules-table tbody tr[data-rule="login"]');
  });

  it('shows counts, the top offender and the shadow would-refuse as the traffic made them', async () => {
    const cell = (rule: string, outcome: string) =>
      page.locator(`#rules-table tr[data-rule="${rule}"] td[data-outcome="${outcome}"]`);
    await page.waitForSelector(
      '#rules-table tr[data-rule="login"] td[data-outcome="refused"][data-total="2"]',
    );
    await page.waitForSelector(
      '#rules-table tr[data-rule="search"] td[data-outcome="shadow-refused"][data-total="2"]',
    );
    assert.equal(await cell('login', 'admitted').getAttribute('data-total'), '4');
    assert.equal(await cell('search', 'admitted').getAttribute('data-total'), '2');
    assert.match((await cell('login', 'refused').innerText()).trim(), /^2\b/);
    const top = page.locator('table[data-offenders="login/login/refused"] tbody tr').first();
    assert.equal(await top.getAttribute('data-count'), '2');
    assert.match((await top.getAttribute('data-id'))!, /^key:v1:[\w-]{22}$/);
    const shadow = page.locator('table[data-offenders="search/search/shadow"] tbody tr').first();
    assert.equal(await shadow.getAttribute('data-count'), '2');
    // The guarded rule's refusal is the fifth.
    assert.equal(await page.locator('#recent-table tbody tr').count(), 5);
    assert.equal(await page.locator('#recent-table tbody tr[data-outcome="shadow-refused"]').count(), 2);
    assert.match(await page.locator('#status').innerText(), /live/);
    assert.equal(await page.locator('#decisions-chart canvas').count(), 1);
    assert.equal(await page.locator('#latency-chart canvas').count(), 1);
    assert.match(await page.locator('#policy-figures').innerText(), /HMAC/);
  });

  it("shows a limit's burst, and the legend's values before any pointer is on the chart", async () => {
    await page.mouse.move(1, 1);
    const limits = page.locator('#rules-table tr[data-rule="uploads"] td').first();
    assert.equal((await limits.innerText()).trim(), '1 per 1s, burst 10, token-bucket');
    assert.match(
      await page.locator('#policy-rules').innerText(),
      /uploads — key \[address\]: 1 per 1s, burst 10/,
    );
    const legend = page.locator('#decisions-chart .u-legend .u-series .u-value');
    await page.waitForFunction(() =>
      document.querySelector('#decisions-chart')?.getAttribute('data-time-labels'),
    );
    const values = await legend.allInnerTexts();
    assert.equal(values.length, 9, 'the time and eight outcomes');
    assert.match(values[0]!, /^\d\d:\d\d:\d\d$/);
    for (const value of values.slice(1)) assert.match(value, /^\d+\.\d\/s$/);
  });

  it('carries no address, header value, token or secret, in the page or in its feed', async () => {
    const html = await page.content();
    const { text } = await readFeed(sluice.url, (s) => totalOf(s, 'login', 'refused') === 2, admin);
    for (const value of [OFFENDER, OTHER, SHADOWED, NICK, ADMIN, SECRET]) {
      assert.ok(!html.includes(value), `the page carries ${value}`);
      assert.ok(!text.includes(value), `the feed carries ${value}`);
    }
  });

  it('inspects a typed key by keyboard: the same bucket id as the top offender, its limit spent', async () => {
    const offender = await page
      .locator('table[data-offenders="login/login/refused"] tbody tr')
      .first()
      .getAttribute('data-id');
    await page.focus('#inspect-rule');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => (document.activeElement as HTMLInputElement).name), 'address');
    await page.keyboard.type(OFFENDER);
    await page.keyboard.press('Enter');
    const id = page.locator('#inspect-result [data-inspected-id]');
    await id.waitFor();
    assert.equal(await id.innerText(), offender);
    assert.equal(
      await page.locator('#inspect-result li[data-limit="login"]').getAttribute('data-remaining'),
      '0',
    );
    assert.ok(!(await page.locator('#inspect-result').innerText()).includes(OFFENDER));
  });

  it('resets the top offender from its row: the bucket is full again, audited by its id only', async () => {
    const row = page.locator('table[data-offenders="login/login/refused"] tbody tr').first();
    const id = (await row.getAttribute('data-id'))!;
    // login has no lockout: a reset button, no unblock.
    assert.equal(await row.locator('button[data-action="unblock"]').count(), 0);
    await row.locator('button[data-action="reset"]').click();
    await page.waitForFunction(() =>
      /reset in login/.test(document.getElementById('action-status')!.textContent ?? ''),
    );
    assert.match(
      await page.locator('#action-status').innerText(),
      new RegExp(`^${id} reset in login \\(1 limit\\)`),
    );
    // The inspector peeks at the same bucket: full again.
    await page.locator('#inspect-form button[type="submit"]').click();
    await page.waitForSelector('#inspect-result li[data-limit="login"][data-remaining="3"]');
    const audit = sluice
      .output()
      .split('\n')
      .filter((line) => line.includes('"event":"bucket-reset"'));
    assert.equal(audit.length, 1);
    assert.deepEqual((({ rule, bucket, limits }) => ({ rule, bucket, limits }))(JSON.parse(audit[0]!)), {
      rule: 'login',
      bucket: id,
      limits: 1,
    });
    assert.ok(!audit[0]!.includes(OFFENDER));
  });

  it('unblocks a locked-out bucket from the inspector', async () => {
    await page.selectOption('#inspect-rule', 'guarded');
    await page.fill('#inspect-parts input[name="address"]', OFFENDER);
    await page.locator('#inspect-form button[type="submit"]').click();
    await page.waitForSelector('#inspect-result li[data-limit="guarded"][data-remaining="0"]');
    await page.locator('#inspect-result button[data-action="unblock"]').click();
    await page.waitForFunction(() =>
      /unblocked in guarded/.test(document.getElementById('action-status')!.textContent ?? ''),
    );
    await page.locator('#inspect-form button[type="submit"]').click();
    await page.waitForSelector('#inspect-result li[data-limit="guarded"][data-remaining="1"]');
    assert.match(sluice.output(), /"event":"bucket-unblock","rule":"guarded","bucket":"key:v1:[\w-]{22}"/);
  });

  it('is keyboard-navigable: a skip link first, then every control, chart and scrolling table in order', async () => {
    await page.reload();
    await page.waitForSelector('#rules-table tbody tr[data-rule="login"]');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.className), 'skip');
    await page.keyboard.press('Enter');
    const reached: string[] = [];
    for (let i = 0; i < 45; i++) {
      await page.keyboard.press('Tab');
      reached.push(
        await page.evaluate(() => {
          const el = document.activeElement!;
          return el.id || el.getAttribute('aria-labelledby') || el.getAttribute('aria-label') || el.tagName;
        }),
      );
    }
    const order = ['chart-rule', 'decisions-chart', 'rules-h', 'inspect-rule', 'part-0', 'BUTTON'];
    let at = -1;
    for (const stop of order) {
      const found = reached.indexOf(stop, at + 1);
      assert.ok(
        found > at,
        `${stop} not reached after ${order[order.indexOf(stop) - 1]}: ${reached.join(' ')}`,
      );
      at = found;
    }
  });

  it('draws outcomes in a colour-blind-safe palette, each with its own line pattern', async () => {
    // The table's head is drawn from the feed's snapshots: on a busy machine the first may still be on its way.
    await page.waitForSelector('#rules-table thead .swatch', { timeout: 15_000 });
    const swatches = await page.$$eval('#rules-table thead .swatch', (marks) =>
      marks.map((m) => [getComputedStyle(m).borderTopColor, getComputedStyle(m).borderTopStyle]),
    );
    assert.ok(swatches.length >= 3);
    for (const [colour] of swatches) assert.ok(PALETTE.has(colour!), colour);
    assert.equal(new Set(swatches.map(([c]) => c)).size, swatches.length, 'one colour per outcome');
  });

  it('reads at 1280×800 and at phone width (screenshots), its time labels apart at both', async () => {
    await page.screenshot({ path: join(shots, 'dashboard-1280x800.png') });
    const wideLabels = await page.locator('#decisions-chart').getAttribute('data-time-labels');
    assertApart(await timeLabels(page), 'at 1280 px');
    await page.setViewportSize({ width: 390, height: 844 });
    // Nothing wider than the screen but the tables, which scroll in their own region (the charts
    // follow their containers once the resize is observed).
    await page
      .waitForFunction(() => document.documentElement.scrollWidth <= window.innerWidth, undefined, {
        timeout: 5000,
      })
      .catch(() => {});
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `the page is ${overflow} px wider than the phone's screen`);
    await page.waitForFunction(
      () => (document.querySelector('#decisions-chart canvas') as HTMLCanvasElement).clientWidth < 390,
    );
    await page.waitForFunction(
      (wide) => document.querySelector('#decisions-chart')?.getAttribute('data-time-labels') !== wide,
      wideLabels,
    );
    assertApart(await timeLabels(page), 'at phone width');
    await page.screenshot({ path: join(shots, 'dashboard-390x844.png') });
    assert.deepEqual(errors, []);
  });
});

/** The time axis's labels, as the chart drew them: [left, width] in px each, left to right. */
async function timeLabels(page: Page): Promise<[number, number][]> {
  const text = await page.locator('#decisions-chart').getAttribute('data-time-labels');
  return (JSON.parse(text ?? '[]') as [number, number][]).sort((a, b) => a[0] - b[0]);
}

/** At least two labels, and no label's box reaching into the next one's. */
function assertApart(boxes: [number, number][], where: string): void {
  assert.ok(boxes.length >= 2, `${where}: ${boxes.length} time labels`);
  for (let i = 1; i < boxes.length; i++) {
    const [left, width] = boxes[i - 1]!;
    assert.ok(
      left + width < boxes[i]![0],
      `${where}: labels ${i - 1} and ${i} overlap: ${JSON.stringify(boxes)}`,
    );
  }
}
