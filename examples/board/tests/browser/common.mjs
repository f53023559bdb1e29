// What both browser scripts share: reading a page's columns, the step protocol with
// ../browser.rs (`STEP {json}` on stdout, `ok` or a failure back on stdin; `ASK {json}`
// for what only the server side can do, answered with a JSON line), and the scenario
// both browsers run (`scenario`), through a driver that hides playwright-core's and
// puppeteer-core's differences.
import readline from "node:readline";

const input = readline.createInterface({ input: process.stdin });
const lines = input[Symbol.asyncIterator]();

/** Every column's card ids, top to bottom, as the page shows them. */
export function columns(page) {
  return page.evaluate(() =>
    Object.fromEntries(
      [...document.querySelectorAll(".list")].map((l) => [
        l.dataset.column,
        [...l.querySelectorAll(".card")].map((c) => c.dataset.id),
      ]),
    ),
  );
}

/** Reports a step and waits for the Rust side's verdict. */
export async function step(name, pages, extra = {}) {
  const shown = {};
  for (const [k, p] of Object.entries(pages)) shown[k] = await columns(p);
  console.log("STEP " + JSON.stringify({ name, pages: shown, ...extra }));
  const { value } = await lines.next();
  if (value !== "ok") throw new Error(`step ${name}: ${value}`);
}

/** Asks the Rust side for something only it can do (hold writes, cut the event
 * streams, make another board's card, run and interrupt the real server). */
export async function ask(what) {
  console.log("ASK " + JSON.stringify(what));
  const { value } = await lines.next();
  const answer = JSON.parse(value);
  if (answer.error) throw new Error(`ask ${JSON.stringify(what)}: ${answer.error}`);
  return answer;
}

/** Stops reading stdin (it stays open: without this the reader keeps node alive). */
export function done() {
  input.close();
}

/** The page answered its writes and shows board version `v` (or any, when null):
 * the condition both drivers wait for. */
export const settledWhen = (v) => document.body.dataset.pending === "0" &&
  document.body.dataset.version !== "" &&
  (v === null || document.body.dataset.version === String(v));

export const card = (id) => `.card[data-id="${id}"]`;

const version = (page) => page.evaluate(() => Number(document.body.dataset.version));
const noticeShown = (page) => page.evaluate(() => !document.getElementById("notice").hidden);
const noticeText = (page) => page.evaluate(() => document.getElementById("notice").textContent);
const hideNotice = (page) => page.evaluate(() => { document.getElementById("notice").hidden = true; });

/** The page answered its writes and shows board version `v` (or any, when null);
 * returns the version it shows. */
export async function settled(d, page, v = null, timeout = 10_000) {
  await d.waitFor(page, settledWhen, v, timeout);
  return version(page);
}

/** Drags card `id` with the mouse onto the upper part of card `before` (it lands just
 * above it), or to the end of `column` when `before` is null. */
export async function drag(page, id, { before = null, column = null }) {
  const box = async (sel) => (await page.$(sel)).boundingBox();
  const s = await box(card(id));
  let to;
  if (before) {
    const t = await box(card(before));
    to = [t.x + 30, t.y + 3];
  } else {
    const l = await box(`.list[data-column="${column}"]`);
    to = [l.x + 30, l.y + l.height - 2];
  }
  await page.mouse.move(s.x + s.width / 2, s.y + s.height / 2);
  await page.mouse.down();
  await page.mouse.move(...to, { steps: 5 });
  await page.mouse.up();
}

/** A page on the board at `base`, read and live. */
export async function open(d, base) {
  const page = await d.newPage();
  page.on("pageerror", (e) => console.error(`page error: ${e}`));
  await page.goto(base);
  await settled(d, page);
  await d.waitFor(page, () => document.getElementById("live").textContent === "live", null, 10_000);
  return page;
}

/** Which of `pages` (by name) show the notice of a refusal. */
async function refusedIn(pages) {
  const out = [];
  for (const [k, p] of Object.entries(pages)) if (await noticeShown(p)) out.push(k);
  return out;
}

/**
 * The scenario both browsers run against the board at `base`; `d` is the driver:
 * `{ name, space, newPage(), waitFor(page, fn, arg, timeout), shot(page, name) }` (`space`:
 * the space bar as its `keyboard.press` names it). Returns the
 * two pages it leaves open.
 */
export async function scenario(d, base) {
  const a = await open(d, base);
  const b = await open(d, base);
  await step(`open in ${d.name}`, { a, b });

  // a drag in A appears in B within a second
  let shown = await columns(a);
  const v0 = await settled(d, a);
  let t0 = Date.now();
  await drag(a, shown.todo[2], { before: shown.todo[0] });
  await settled(d, a, v0 + 1);
  await settled(d, b, v0 + 1);
  const within = Date.now() - t0;
  if (within > 1000) throw new Error(`B showed A's drag after ${within} ms`);
  await step("drag within a column, seen by the other page", { a, b }, { ms: within });

  // across columns
  shown = await columns(a);
  t0 = Date.now();
  await drag(a, shown.todo[0], { before: shown.doing[0] });
  await settled(d, a, v0 + 2);
  await settled(d, b, v0 + 2);
  await step("drag across columns", { a, b }, { ms: Date.now() - t0 });

  // both pages drop a card into the same gap at the same moment (the server holds each
  // write until both arrived): one wins, the other is refused, told, and re-reads;
  // neither loses or doubles a card
  shown = await columns(a);
  const gap = shown.done[1];
  await ask({ hold: 2 });
  await Promise.all([
    drag(a, shown.todo[0], { before: gap }),
    drag(b, shown.doing[0], { before: gap }),
  ]);
  let together = (await ask({ held: true })).together;
  let v = Math.max(await settled(d, a), await settled(d, b));
  await settled(d, a, v);
  await settled(d, b, v);
  let refused = await refusedIn({ a, b });
  await d.shot(a, "a");
  await d.shot(b, "b");
  if (!together || refused.length !== 1 || v - (v0 + 2) !== 1) {
    throw new Error(`one of two drops into one gap must be refused: together ${together}, refused ${refused}, ${v - (v0 + 2)} writes`);
  }
  await step("both drag into one gap at once", { a, b }, { refused, writes: v - (v0 + 2) });

  // drops into different gaps at the same moment: both win, neither is told anything
  for (const p of [a, b]) await hideNotice(p);
  shown = await columns(a);
  const [x, y] = ["todo", "doing", "done"].filter((c) => shown[c].length >= 2);
  if (!y) throw new Error(`two columns of two cards are needed: ${JSON.stringify(shown)}`);
  let before = v;
  await ask({ hold: 2 });
  await Promise.all([
    drag(a, shown[x].at(-1), { before: shown[x][0] }),
    drag(b, shown[y].at(-1), { before: shown[y][0] }),
  ]);
  together = (await ask({ held: true })).together;
  v = Math.max(await settled(d, a), await settled(d, b));
  await settled(d, a, v);
  await settled(d, b, v);
  refused = await refusedIn({ a, b });
  const now = await columns(a);
  if (!together || refused.length || v !== before + 2 || now[x][0] !== shown[x].at(-1) || now[y][0] !== shown[y].at(-1)) {
    throw new Error(`two unrelated drops must both win: together ${together}, refused ${refused}, ${v - before} writes`);
  }
  await step("both drag into different gaps at once", { a, b }, { refused: refused.length });

  // a drag whose answer is lost: the server applies it and answers after the page gave
  // up waiting; the page sends the same drag again with the same request key and gets
  // what the first one did (a replay): the card moved once, the board's version once
  for (const p of [a, b]) await hideNotice(p);
  shown = await columns(a);
  before = await settled(d, a);
  const [lx] = ["todo", "doing", "done"].filter((c) => shown[c].length >= 2);
  await a.evaluate(() => { writeTimeout = 400; });
  await ask({ lose: 1 });
  t0 = Date.now();
  await drag(a, shown[lx].at(-1), { before: shown[lx][0] });
  const lost = await ask({ lost: true });
  await settled(d, a, before + 1);
  await settled(d, b, before + 1);
  const resent = await a.evaluate(() => Number(document.body.dataset.resent ?? 0));
  await a.evaluate(() => { writeTimeout = 10_000; });
  const afterLost = await columns(b);
  refused = await refusedIn({ a, b });
  if (lost.sent !== 2 || lost.keys !== 1 || !lost.keyed || lost.replayed !== 1 || resent !== 1 ||
      refused.length || afterLost[lx][0] !== shown[lx].at(-1) || (await version(a)) !== before + 1) {
    throw new Error(`a drag whose answer was lost: ${JSON.stringify({ lost, resent, refused, version: await version(a), before })}`);
  }
  await step("a drag whose answer was lost is sent again and applied once", { a, b }, { ms: Date.now() - t0, resent });

  // A presses a card and holds it while B's drag in another column arrives: the press
  // is not cancelled (the page re-renders after it), and A's drag lands where it let go
  shown = await columns(a);
  before = await settled(d, a);
  const [p, q] = ["todo", "doing", "done"].filter((c) => shown[c].length >= 2);
  const held = await (await a.$(card(shown[p].at(-1)))).boundingBox();
  const onto = await (await a.$(card(shown[p][0]))).boundingBox();
  await a.mouse.move(held.x + held.width / 2, held.y + held.height / 2);
  await a.mouse.down();
  await drag(b, shown[q].at(-1), { before: shown[q][0] });
  await settled(d, b, before + 1);
  await settled(d, a, before + 1);
  await a.mouse.move(onto.x + 30, onto.y + 3, { steps: 5 });
  await a.mouse.up();
  await settled(d, a, before + 2);
  await settled(d, b, before + 2);
  const pressedNow = await columns(b);
  if (pressedNow[p][0] !== shown[p].at(-1) || pressedNow[q][0] !== shown[q].at(-1)) {
    throw new Error(`a press held while another change arrived: ${JSON.stringify(pressedNow)}`);
  }
  await step("a press survives another page's change", { a, b });

  // a stale page (its live connection closed) drags: refused, it re-reads and says so
  const c = await open(d, base);
  await c.evaluate(() => live.close());
  shown = await columns(a);
  before = await settled(d, a);
  await drag(a, shown.done.at(-1), { before: shown.done[0] });
  await settled(d, a, before + 1);
  await settled(d, b, before + 1);
  const stale = await columns(c);
  // by what the stale page shows, its second card of Done goes first
  await drag(c, stale.done[1], { before: stale.done[0] });
  await d.waitFor(c, () => !document.getElementById("notice").hidden, null, 5_000);
  await settled(d, c, before + 1);
  await step("a stale page's drag is refused and repaired", { a, b, c }, { notice: await noticeText(c) });

  // add at the end of a column, add below a card, remove one
  shown = await columns(a);
  let vv = await settled(d, a);
  // B starts typing a card below the first of Doing while A adds one: what B typed
  // survives A's change arriving
  await b.click(`${card(shown.doing[0])} [data-action="add-below"]`);
  await b.type("form.below input", "Write the announcement");
  await a.type(".column:nth-child(1) form.add:not(.below) input", "Ship it");
  await a.keyboard.press("Enter");
  await settled(d, a, vv + 1);
  await settled(d, b, vv + 1);
  const typed = await b.evaluate(() => document.querySelector("form.below input").value);
  if (typed !== "Write the announcement") throw new Error(`B's typing was lost: ${typed}`);
  await b.focus("form.below input");
  await b.keyboard.press("Enter");
  await settled(d, b, vv + 2);
  await settled(d, a, vv + 2);
  await a.click(`${card(shown.done[0])} [data-action="remove"]`);
  await settled(d, a, vv + 3);
  await settled(d, b, vv + 3);
  await step("add at the end, add below a card, remove", { a, b }, {
    added_below: shown.doing[0],
    removed: shown.done[0],
  });

  // the stale page still shows the removed card and drags it: 404, said in words (no
  // card id), the page re-reads and no longer shows it
  await hideNotice(c);
  const staleNow = await columns(c);
  const target = staleNow.todo.find((id) => id !== shown.done[0]);
  await drag(c, shown.done[0], { before: target });
  await d.waitFor(c, () => !document.getElementById("notice").hidden, null, 5_000);
  const gone = await noticeText(c);
  if (!gone.startsWith("That card is gone") || /[0-9a-f]{8}-[0-9a-f]{4}/.test(gone)) {
    throw new Error(`the notice for a removed card: ${gone}`);
  }
  await settled(d, c, vv + 3);
  await step("a stale page drags a removed card", { a, b, c }, { notice: gone });
  await c.close();

  // the keyboard: the last card of the longest column, picked up with Space, one place
  // up with the arrow, dropped with Enter; the other page follows, the card keeps focus
  shown = await columns(a);
  vv = await settled(d, a);
  const longest = Object.keys(shown).reduce((p, q) => (shown[q].length > shown[p].length ? q : p));
  const moving = shown[longest].at(-1);
  t0 = Date.now();
  await a.focus(card(moving));
  await a.keyboard.press(d.space);
  await a.keyboard.press("ArrowUp");
  await a.keyboard.press("Enter");
  await settled(d, a, vv + 1);
  await settled(d, b, vv + 1);
  const keyed = await columns(b);
  if (keyed[longest].indexOf(moving) !== shown[longest].length - 2) {
    throw new Error(`the keyboard move did not land one place up: ${JSON.stringify(keyed[longest])}`);
  }
  const focused = await a.evaluate(() => document.activeElement?.dataset?.id);
  if (focused !== moving) throw new Error(`the moved card lost the focus (${focused})`);
  await step("a keyboard move", { a, b }, {
    ms: Date.now() - t0,
    announced: await a.evaluate(() => document.getElementById("announce").textContent),
  });

  // another board's card, moved and removed by a hostile client in page A: 404 both,
  // nothing written, no page changes
  vv = await settled(d, a);
  const { card: foreign } = await ask({ foreign: true });
  shown = await columns(a);
  const statuses = await a.evaluate(async ({ foreign, top, v }) => {
    const post = await fetch("/api/move", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ card: foreign, column: "todo", prev: null, next: top, version: v }),
    });
    const del = await fetch(`/api/cards/${foreign}`, { method: "DELETE" });
    return [post.status, del.status];
  }, { foreign, top: shown.todo[0] ?? null, v: vv });
  await new Promise((r) => setTimeout(r, 300));
  if (statuses.join() !== "404,404" || (await version(a)) !== vv || (await version(b)) !== vv) {
    throw new Error(`another board's card: ${statuses}, versions ${await version(a)} ${await version(b)} (was ${vv})`);
  }
  await step("another board's card is refused", { a, b }, { statuses });

  // the event streams are cut and a change is made meanwhile: the pages reconnect
  // (Last-Event-ID) and show it within 5 seconds
  t0 = Date.now();
  const { version: after } = await ask({ cut: true });
  await settled(d, a, after, 5_000);
  await settled(d, b, after, 5_000);
  const resumed = Date.now() - t0;
  await d.waitFor(a, () => document.getElementById("live").textContent === "live", null, 5_000);
  await step("the event streams cut and resumed", { a, b }, { ms: resumed });

  // a reload shows the same order
  await a.reload();
  await settled(d, a);
  await step("reload", { a, b });
  return { a, b };
}

/** Ctrl-C on the real server (`cargo run -p board`) with two pages open: it exits
 * within a second (the Rust side measures it) and the pages say they lost it. */
export async function interrupt(d) {
  const { url } = await ask({ serve: true });
  const a = await open(d, url);
  const b = await open(d, url);
  await step(`two pages on the real server in ${d.name}`, { a, b });
  const { ms } = await ask({ interrupt: true });
  for (const p of [a, b]) {
    await d.waitFor(p, () => document.getElementById("live").textContent !== "live", null, 5_000);
  }
  await step("Ctrl-C with the pages open", {}, { ms });
  await a.close();
  await b.close();
}
