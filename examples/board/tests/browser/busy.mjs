// The figures' pages (../../examples/figures.rs): on a board of 24 cards, four Chromium
// pages drag random cards to random places as fast as they settle, then one page drags while another shows it. Prints one line,
// `RESULT {"drags", "refused", "codes", "delays"}`: the drags sent, how many the server
// refused (409 or 404) and why (the error codes), and for each of page A's drags the milliseconds from its request leaving
// A to page B showing its version.
//
// usage: node busy.mjs <base url>
import { chromium } from "playwright-core";
import { columns, open as openPage, settled as settledIn } from "./common.mjs";

const [base] = process.argv.slice(2);
const executablePath = process.env.CHROMIUM || "/usr/bin/chromium";
const DRAGS = 25;
const DELAYS = 20;


/** A random card of what `page` shows, dropped on the upper part of another card (or
 * at the end of a column); resolves when the page has its answer. */
async function randomDrag(page) {
  const shown = await columns(page);
  const cards = Object.values(shown).flat();
  const id = cards[Math.floor(Math.random() * cards.length)];
  const column = Object.keys(shown)[Math.floor(Math.random() * 3)];
  const targets = shown[column].filter((x) => x !== id);
  const k = Math.floor(Math.random() * (targets.length + 1));
  const source = `.card[data-id="${id}"]`;
  try {
    if (k < targets.length) {
      await page.dragAndDrop(source, `.card[data-id="${targets[k]}"]`, {
        targetPosition: { x: 30, y: 3 }, timeout: 2_000,
      });
    } else {
      const list = `.list[data-column="${column}"]`;
      const box = await page.locator(list).boundingBox();
      await page.dragAndDrop(source, list, { targetPosition: { x: 30, y: box.height - 2 }, timeout: 2_000 });
    }
  } catch (e) {
    if (process.env.BUSY_DEBUG) console.error(String(e).split("\n").slice(0, 3).join(" | "));
    // the card moved away under the pointer (another page's drag re-rendered it)
  }
  await settled(page);
}

// a board of a team's size: 24 cards, 8 a column
{
  let b = await (await fetch(`${base}api/board`)).json();
  for (const column of ["todo", "doing", "done"]) {
    for (let n = b.columns[column].length; n < 8; n++) {
      const r = await fetch(`${base}api/cards`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ column, title: `Card ${column} ${n + 1}`, prev: b.columns[column].at(-1)?.id ?? null, next: null, version: b.version }),
      });
      if (!r.ok) throw new Error(`adding a card: ${r.status}`);
      b = await (await fetch(`${base}api/board`)).json();
    }
  }
}

const browser = await chromium.launch({
  executablePath,
  args: ["--headless", "--no-sandbox", "--disable-gpu"],
});
// common.mjs's driver: pages tall enough for 8 cards a column
const d = {
  async newPage() {
    const context = await browser.newContext({ viewport: { width: 960, height: 700 } });
    return context.newPage();
  },
  waitFor: (page, fn, arg, timeout) => page.waitForFunction(fn, arg, { timeout }),
};
const settled = (page) => settledIn(d, page, null, 20_000);
const answers = { drags: 0, refused: 0, codes: {} };
const count = (page) => page.on("response", async (r) => {
  if (!r.url().endsWith("/api/move")) return;
  answers.drags += 1;
  if (r.status() === 409 || r.status() === 404) {
    answers.refused += 1;
    // why: the version moved on (any write to the board), or the drop's own gap
    // changed (stale_neighbours, not_found, not_in_collection)
    const { code } = await r.json().catch(() => ({ code: "unreadable" }));
    answers.codes[code] = (answers.codes[code] ?? 0) + 1;
  }
});
try {
  const pages = [];
  for (let i = 0; i < 4; i++) pages.push(await openPage(d, base));
  pages.forEach(count);
  await Promise.all(pages.map(async (p) => {
    for (let i = 0; i < DRAGS; i++) await randomDrag(p);
  }));
  const busy = { ...answers, codes: { ...answers.codes } };
  // page A drags, page B shows it: request sent in A to B's new version
  const [a, b] = pages;
  await Promise.all(pages.map(settled));
  await b.evaluate(() => {
    window.shownAt = {};
    new MutationObserver(() => { window.shownAt[document.body.dataset.version] = Date.now(); })
      .observe(document.body, { attributes: true, attributeFilter: ["data-version"] });
  });
  const sentAt = [];
  a.on("request", (r) => { if (r.url().endsWith("/api/move")) sentAt.push(Date.now()); });
  const delays = [];
  for (let i = 0; i < DELAYS; i++) {
    const before = sentAt.length;
    await randomDrag(a);
    if (sentAt.length === before) continue; // dropped where it was: nothing sent
    const v = await a.evaluate(() => document.body.dataset.version);
    await b.waitForFunction((v) => document.body.dataset.version === v, v, { timeout: 10_000 });
    const shown = await b.evaluate((v) => window.shownAt[v], v);
    delays.push(shown - sentAt.at(-1));
  }
  console.log("RESULT " + JSON.stringify({ ...busy, delays }));
} finally {
  await browser.close();
  process.exit(0);
}
