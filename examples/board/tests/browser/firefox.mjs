// The board in Debian's Firefox ESR, driven by puppeteer-core over WebDriver BiDi (no
// browser is downloaded): the scenario both browsers run (common.mjs), then Ctrl-C on
// the real server with pages open. Run by ../browser.rs as drag.mjs is: after each step
// it prints `STEP {json}` with what every page shows and waits for `ok` on stdin.
//
// usage: node firefox.mjs <base url> <screenshot dir>
import puppeteer from "puppeteer-core";
import { done, interrupt, scenario } from "./common.mjs";

const [base, shots] = process.argv.slice(2);
const executablePath = process.env.FIREFOX || "/usr/bin/firefox-esr";

const browser = await puppeteer.launch({ browser: "firefox", executablePath, headless: true });
const d = {
  name: "Firefox",
  // puppeteer over BiDi knows the space bar as " " only
  space: " ",
  async newPage() {
    const page = await browser.newPage();
    await page.setViewport({ width: 960, height: 560 });
    return page;
  },
  // polled on a timer: puppeteer's default polls on animation frames, which a tab in
  // the background does not get
  waitFor: (page, fn, arg, timeout) => page.waitForFunction(fn, { timeout, polling: 50 }, arg),
  shot: (page, name) => page.screenshot({ path: `${shots}/board-firefox-${name}.png` }),
};
try {
  const { a } = await scenario(d, base);
  await a.screenshot({ path: `${shots}/board-firefox.png` });
  await interrupt(d);
  console.log("DONE");
} finally {
  await browser.close();
  done();
}
