// Two (then three) real browser pages on one board, driven by playwright-core in
// Debian's chromium. Run by ../browser.rs, which serves the board and reads the
// database: after each step this script prints `STEP {json}` with what every page
// shows, and waits for `ok` on stdin (the Rust side compares it with the database).
//
// usage: node drag.mjs <base url> <screenshot dir>
import { chromium } from "playwright-core";
import { card, columns, done, settledWhen, step } from "./common.mjs";

const [base, shots] = process.argv.slice(2);
const executablePath = process.env.CHROMIUM || "/usr/bin/chromium";

/** The page answered its writes and shows board version `v` (or any, when null). */
async function settled(page, v = null) {
  await page.waitForFunction(
    settledWhen,
    v,
    { timeout: 10_000 },
  );
  return Number(await page.evaluate(() => document.body.dataset.version));
}

/** Drags card `id` onto the upper part of card `before` (lands just above it), or to
 * the end of `column` when `before` is null. */
async function drag(page, id, { before = null, column = null }) {
  if (before) {
    await page.dragAndDrop(card(id), card(before), { targetPosition: { x: 30, y: 3 } });
  } else {
    const list = page.locator(`.list[data-column="${column}"]`);
    const box = await list.boundingBox();
    await page.dragAndDrop(card(id), `.list[data-column="${column}"]`, {
      targetPosition: { x: 30, y: box.height - 2 },
    });
  }
}

async function open(browser, { live = true } = {}) {
  const context = await browser.newContext({ viewport: { width: 960, height: 560 } });
  const page = await context.newPage();
  page.on("pageerror", (e) => console.error(`page error: ${e}`));
  if (!live) {
    // a page whose live connection is down: it keeps what it read and goes stale
    await page.route("**/api/events", (r) => r.abort());
  }
  await page.goto(base);
  await settled(page);
  if (live) await page.waitForFunction(() => document.getElementById("live").textContent === "live");
  return page;
}

const browser = await chromium.launch({
  executablePath,
  args: ["--headless", "--no-sandbox", "--disable-gpu"],
});
try {
  const a = await open(browser);
  const b = await open(browser);
  await step("open", { a, b });

  // a drag in A appears in B within a second
  let shown = await columns(a);
  const v0 = await settled(a);
  let t0 = Date.now();
  await drag(a, shown.todo[2], { before: shown.todo[0] });
  await settled(a, v0 + 1);
  await settled(b, v0 + 1);
  const within = Date.now() - t0;
  if (within > 1000) throw new Error(`B showed A's drag after ${within} ms`);
  await step("drag within a column, seen by the other page", { a, b }, { ms: within });

  // across columns
  shown = await columns(a);
  t0 = Date.now();
  await drag(a, shown.todo[0], { before: shown.doing[0] });
  await settled(a, v0 + 2);
  await settled(b, v0 + 2);
  await step("drag across columns", { a, b }, { ms: Date.now() - t0 });

  // both pages drop a card into the same gap at the same moment: one wins, the other
  // is refused (it held the old version) and re-reads; neither loses or doubles a card
  shown = await columns(a);
  const gap = shown.done[1];
  // each page's write waits until the other's was sent too: both reach the server at
  // once, each with the version its page showed
  let sent = 0;
  let release;
  const both = new Promise((r) => { release = r; });
  const hold = async (route) => {
    sent += 1;
    if (sent === 2) release();
    await both;
    await route.continue();
  };
  await a.route("**/api/move", hold);
  await b.route("**/api/move", hold);
  await Promise.all([
    drag(a, shown.todo[0], { before: gap }),
    drag(b, shown.doing[0], { before: gap }),
  ]);
  await both;
  await a.unroute("**/api/move", hold);
  await b.unroute("**/api/move", hold);
  const va = await settled(a);
  const vb = await settled(b);
  const v = Math.max(va, vb);
  await settled(a, v);
  await settled(b, v);
  const refused = [];
  for (const [k, p] of [["a", a], ["b", b]]) {
    if (await p.isVisible("#notice")) refused.push(k);
  }
  await a.screenshot({ path: `${shots}/board-a.png` });
  await b.screenshot({ path: `${shots}/board-b.png` });
  if (refused.length !== 1 || v - (v0 + 2) !== 1) {
    throw new Error(`one of two drags at once must be refused: refused ${refused}, ${v - (v0 + 2)} writes`);
  }
  await step("both drag into one gap at once", { a, b }, { refused, writes: v - (v0 + 2) });

  // a stale page (its live connection is down) drags: refused, it re-reads and says so
  const c = await open(browser, { live: false });
  shown = await columns(a);
  const before = await settled(a);
  await drag(a, shown.done.at(-1), { before: shown.done[0] });
  await settled(a, before + 1);
  await settled(b, before + 1);
  const stale = await columns(c);
  // by what the stale page shows, its second card of Done goes first
  await drag(c, stale.done[1], { before: stale.done[0] });
  await c.waitForSelector("#notice:not([hidden])", { timeout: 5_000 });
  await settled(c, before + 1);
  await step("a stale page's drag is refused and repaired", { a, b, c }, {
    notice: await c.textContent("#notice"),
  });

  // add at the end of a column, add below a card, remove one
  shown = await columns(a);
  let vv = await settled(a);
  // B starts typing a card below the first of Doing while A adds one: what B typed
  // survives A's change arriving
  await b.click(`${card(shown.doing[0])} [data-action="add-below"]`);
  await b.fill("form.below input", "Write the announcement");
  await a.fill('.column:nth-child(1) form.add:not(.below) input', "Ship it");
  await a.press('.column:nth-child(1) form.add:not(.below) input', "Enter");
  await settled(a, vv + 1);
  await settled(b, vv + 1);
  const typed = await b.inputValue("form.below input");
  if (typed !== "Write the announcement") throw new Error(`B's typing was lost: ${typed}`);
  await b.press("form.below input", "Enter");
  await settled(b, vv + 2);
  await settled(a, vv + 2);
  await a.click(`${card(shown.done[0])} [data-action="remove"]`);
  await settled(a, vv + 3);
  await settled(b, vv + 3);
  await step("add at the end, add below a card, remove", { a, b }, {
    added_below: shown.doing[0],
    removed: shown.done[0],
  });

  // the stale page still shows the removed card and drags it: 404, said in words (no
  // card id), the page re-reads and no longer shows it
  await c.evaluate(() => { document.getElementById("notice").hidden = true; });
  const staleNow = await columns(c);
  const target = staleNow.todo.find((x) => x !== shown.done[0]);
  await drag(c, shown.done[0], { before: target });
  await c.waitForSelector("#notice:not([hidden])", { timeout: 5_000 });
  const gone = await c.textContent("#notice");
  if (!gone.startsWith("That card is gone") || /[0-9a-f]{8}-[0-9a-f]{4}/.test(gone)) {
    throw new Error(`the notice for a removed card: ${gone}`);
  }
  await settled(c, vv + 3);
  await step("a stale page drags a removed card", { a, b, c }, { notice: gone });

  // the keyboard: the last card of the longest column, picked up with Space, one place
  // up with the arrow, dropped with Enter; the other page follows, the card keeps focus
  shown = await columns(a);
  vv = await settled(a);
  const longest = Object.keys(shown).reduce((x, y) => (shown[y].length > shown[x].length ? y : x));
  const moving = shown[longest].at(-1);
  await a.focus(card(moving));
  await a.keyboard.press("Space");
  await a.keyboard.press("ArrowUp");
  await a.keyboard.press("Enter");
  await settled(a, vv + 1);
  await settled(b, vv + 1);
  const keyed = await columns(a);
  if (keyed[longest].indexOf(moving) !== shown[longest].length - 2) {
    throw new Error(`the keyboard move did not land one place up: ${JSON.stringify(keyed[longest])}`);
  }
  const focused = await a.evaluate(() => document.activeElement?.dataset?.id);
  if (focused !== moving) throw new Error(`the moved card lost the focus (${focused})`);
  await step("a keyboard move", { a, b }, { announced: await a.textContent("#announce") });

  // a phone: 375 px wide with touch, the columns stacked, nothing off screen
  const phone = await browser.newContext({
    viewport: { width: 375, height: 740 },
    isMobile: true,
    hasTouch: true,
    deviceScaleFactor: 2,
  });
  const p = await phone.newPage();
  p.on("pageerror", (e) => console.error(`page error: ${e}`));
  await p.goto(base);
  await settled(p);
  const width = await p.evaluate(() => document.documentElement.scrollWidth);
  if (width > 375) throw new Error(`the phone layout is ${width} px wide`);
  await p.screenshot({ path: `${shots}/board-phone.png`, fullPage: true });
  await step("a phone's layout", { a, b, p }, { width });

  // a finger drags the last card of a column by its handle to the top of it (touch
  // events, as a phone sends them); every page follows
  shown = await columns(p);
  vv = await settled(p);
  const col = ["todo", "doing", "done"].find((c) => shown[c].length >= 2);
  const [top, dragged] = [shown[col][0], shown[col].at(-1)];
  await p.locator(card(top)).scrollIntoViewIfNeeded();
  const h = await p.locator(`${card(dragged)} .handle`).boundingBox();
  const t = await p.locator(card(top)).boundingBox();
  const cdp = await phone.newCDPSession(p);
  const touch = (type, x, y) =>
    cdp.send("Input.dispatchTouchEvent", { type, touchPoints: type === "touchEnd" ? [] : [{ x, y }] });
  const [x0, y0] = [h.x + h.width / 2, h.y + h.height / 2];
  await touch("touchStart", x0, y0);
  for (let i = 1; i <= 6; i++) await touch("touchMove", x0, y0 + ((t.y + 3 - y0) * i) / 6);
  await touch("touchEnd", x0, t.y + 3);
  await settled(p, vv + 1);
  await settled(a, vv + 1);
  await settled(b, vv + 1);
  const touched = await columns(p);
  if (touched[col][0] !== dragged) throw new Error(`the touch drag did not land on top: ${JSON.stringify(touched[col])}`);
  await step("a touch move", { a, b, p });

  // a reload shows the same order
  await a.reload();
  await settled(a);
  await step("reload", { a, b });
  console.log("DONE");
} finally {
  await browser.close();
  done();
}
