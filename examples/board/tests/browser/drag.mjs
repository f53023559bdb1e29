// The board in Debian's chromium, driven by playwright-core: the scenario both browsers
// run (common.mjs), then a phone profile (375 px, touch) and a finger's drag, then
// Ctrl-C on the real server with pages open. Run by ../browser.rs, which serves the
// board and reads the database: after each step this script prints `STEP {json}` with
// what every page shows, and waits for `ok` on stdin.
//
// usage: node drag.mjs <base url> <screenshot dir>
import { chromium } from "playwright-core";
import { card, columns, done, interrupt, scenario, settled, step } from "./common.mjs";

const [base, shots] = process.argv.slice(2);
const executablePath = process.env.CHROMIUM || "/usr/bin/chromium";

const browser = await chromium.launch({
  executablePath,
  args: ["--headless", "--no-sandbox", "--disable-gpu"],
});
const d = {
  name: "Chromium",
  space: "Space",
  async newPage() {
    const context = await browser.newContext({ viewport: { width: 960, height: 560 } });
    return context.newPage();
  },
  waitFor: (page, fn, arg, timeout) => page.waitForFunction(fn, arg, { timeout }),
  shot: (page, name) => page.screenshot({ path: `${shots}/board-${name}.png` }),
};
try {
  const { a, b } = await scenario(d, base);

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
  await settled(d, p);
  const width = await p.evaluate(() => document.documentElement.scrollWidth);
  if (width > 375) throw new Error(`the phone layout is ${width} px wide`);
  await p.screenshot({ path: `${shots}/board-phone.png`, fullPage: true });
  await step("a phone's layout", { a, b, p }, { width });

  // a finger drags the last card of a column by its handle to the top of it (touch
  // events, as a phone sends them); every page follows
  let shown = await columns(p);
  const vv = await settled(d, p);
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
  await settled(d, p, vv + 1);
  await settled(d, a, vv + 1);
  await settled(d, b, vv + 1);
  const touched = await columns(p);
  if (touched[col][0] !== dragged) throw new Error(`the touch drag did not land on top: ${JSON.stringify(touched[col])}`);
  await step("a touch move", { a, b, p });
  await phone.close();

  await interrupt(d);
  console.log("DONE");
} finally {
  await browser.close();
  done();
}
