// What both browser scripts share: reading a page's columns, and the step protocol
// with ../browser.rs (`STEP {json}` on stdout, `ok` or a failure back on stdin).
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
