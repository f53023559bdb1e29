// Regenerates ordered-core/tests/fixtures/reference-keys.json from Rocicorp's
// fractional-indexing (npm). Run: cd tools && npm install fractional-indexing@4.0.0 && node gen-key-fixtures.mjs
import { generateKeyBetween as gkb, generateNKeysBetween as gnkb } from "fractional-indexing";
import { writeFileSync } from "node:fs";

const HEADS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const ALPHABETS = {
  base62: "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
  base95: " !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~",
  base10: "0123456789",
};
let seed = 12345;
const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
const out = { between: [], n_between: [], rejected: [] };
const call = (f) => { try { return { ok: f() }; } catch (e) { return { err: e.message }; } };

for (const [name, digits] of Object.entries(ALPHABETS)) {
  const g = (a, b) => gkb(a, b, digits, HEADS);
  // random positions, appends, prepends, one hot gap
  for (const pattern of ["random", "append", "prepend", "hot"]) {
    const list = [];
    const steps = pattern === "random" ? 1500 : pattern === "hot" ? 300 : 700;
    for (let i = 0; i < steps; i++) {
      let pos;
      if (pattern === "random") pos = Math.floor(rnd() * (list.length + 1));
      else if (pattern === "append") pos = list.length;
      else if (pattern === "prepend") pos = 0;
      else pos = Math.min(1, list.length);
      const a = pos > 0 ? list[pos - 1] : null;
      const b = pos < list.length ? list[pos] : null;
      const k = g(a, b);
      out.between.push([name, a, b, k]);
      list.splice(pos, 0, k);
    }
    // n keys between random neighbours of that list
    for (let i = 0; i < 60; i++) {
      const pos = Math.floor(rnd() * (list.length + 1));
      const a = pos > 0 ? list[pos - 1] : null;
      const b = pos < list.length ? list[pos] : null;
      const n = Math.floor(rnd() * 40);
      out.n_between.push([name, a, b, n, gnkb(a, b, n, digits, HEADS)]);
    }
  }
}
// inputs the reference rejects (default base 62): we must reject them too
const bad = [
  [null, "A00000000000000000000000000"], ["a00", null], ["a00", "a1"], ["0", "1"],
  ["a1", "a1"], ["", null], [null, ""], ["a", null], ["b1", null], ["a0", "a0"],
  ["zzzzzzzzzzzzzzzzzzzzzzzzzzz0", null], ["a1V0", null],
];
for (const [a, b] of bad) {
  const r = call(() => gkb(a, b));
  if (r.err) out.rejected.push([a, b, r.err]);
}
writeFileSync(new URL("../ordered-core/tests/fixtures/reference-keys.json", import.meta.url), JSON.stringify(out));
console.log(out.between.length, out.n_between.length, out.rejected.length);
