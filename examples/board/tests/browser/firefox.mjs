// The board in Debian's Firefox ESR, driven by puppeteer-core over WebDriver BiDi (no
// browser is downloaded). Run by ../browser.rs as drag.mjs is: after each step it prints
// `STEP {json}` with what every page shows and waits for `ok` on stdin.
//
// usage: node firefox.mjs <base url> <screenshot dir>
import puppeteer from "puppeteer-core";
import { card, columns, done, settledWhen, step } from "./common.mjs";

const [base, shots] = process.argv.slice(2);
const executablePath = process.env.FIREFOX || "/usr/bin/firefox-esr";

/** The page answered its writes and shows board version `v` (or any, when null). */
async function settled(page, v = null) {
  await page.waitForFunction(
    settledWhen,
    { timeout: 10_000 },
    v,
  );
  return Number(await page.evaluate(() => document.body.dataset.version));
}

async function open(browser) {
  const page = await browser.newPage();
  await page.setViewport({ width: 960, height: 560 });
  page.on("pageerror", (e) => console.error(`page error: ${e}`));
  await page.goto(base);
  await settled(page);
  await page.waitForFunction(() => document.getElementById("live").textContent === "live", { timeout: 10_000 });
  return page;
}

const browser = await puppeteer.launch({ browser: "firefox", executablePath, headless: true });
try {
  const a = await open(browser);
  const b = await open(browser);
  await step("open in Firefox", { a, b });

  // a keyboard move in A: the last card of the longest column one place up; B follows
  let shown = await columns(a);
  const v0 = await settled(a);
  const longest = Object.keys(shown).reduce((x, y) => (shown[y].length > shown[x].length ? y : x));
  const moving = shown[longest].at(-1);
  const t0 = Date.now();
  await a.focus(card(moving));
  await a.keyboard.press(" ");
  await a.keyboard.press("ArrowUp");
  await a.keyboard.press("Enter");
  await settled(a, v0 + 1);
  await settled(b, v0 + 1);
  const ms = Date.now() - t0;
  if (ms > 2000) throw new Error(`B showed A's move after ${ms} ms`);
  const moved = await columns(b);
  if (moved[longest].indexOf(moving) !== shown[longest].length - 2) {
    throw new Error(`the keyboard move did not land one place up: ${JSON.stringify(moved[longest])}`);
  }
  await step("a keyboard move in Firefox, seen by the other page", { a, b }, { ms });

  // B adds a card by typing; A removes one
  await b.type('.column:nth-child(2) form.add:not(.below) input', "Tested in Firefox");
  await b.keyboard.press("Enter");
  await settled(b, v0 + 2);
  await settled(a, v0 + 2);
  await step("add in Firefox", { a, b });
  shown = await columns(a);
  await a.click(`${card(shown.done[0])} [data-action="remove"]`);
  await settled(a, v0 + 3);
  await settled(b, v0 + 3);
  await a.screenshot({ path: `${shots}/board-firefox.png` });
  await step("remove in Firefox", { a, b }, { removed: shown.done[0] });
  console.log("DONE");
} finally {
  await browser.close();
  done();
}
