// The reference side of ordered-core's `reference` benchmark: the same three patterns
// (append, random gap, hot gap; 10,000 keys each, median of 21 runs) through Rocicorp's
// fractional-indexing. Prints one JSON line: ns per key and the last key of each pattern
// (the Rust side checks it produced the same keys).
// Run by `cargo bench -p ordered-core --bench reference`; needs
//   cd tools && npm install fractional-indexing@4.0.0
import { generateKeyBetween as between } from "fractional-indexing";

const N = 10000;
const RUNS = 21;
const WARMUP = 3;
// the LCG the Rust side uses
let seed = 12345n;
const next = () => {
  seed = (seed * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
  return Number(seed >> 33n);
};

function base(n) {
  const keys = [between(null, null)];
  for (let i = 1; i < n; i++) keys.push(between(keys[i - 1], null));
  return keys;
}
const list = base(1000);
seed = 12345n;
const gaps = Array.from({ length: N }, () => next() % (list.length - 1));

const patterns = {
  append() {
    let last = null;
    for (let i = 0; i < N; i++) last = between(last, null);
    return last;
  },
  random() {
    let k = null;
    for (let i = 0; i < N; i++) k = between(list[gaps[i]], list[gaps[i] + 1]);
    return k;
  },
  hot() {
    const lo = "a0";
    let hi = "a1";
    for (let i = 0; i < N; i++) hi = between(lo, hi);
    return hi;
  },
};

const out = {};
for (const [name, f] of Object.entries(patterns)) {
  const times = [];
  let last = "";
  for (let r = 0; r < RUNS + WARMUP; r++) {
    const t = process.hrtime.bigint();
    last = f();
    const dt = Number(process.hrtime.bigint() - t);
    if (r >= WARMUP) times.push(dt / N); // the first runs warm the JIT up
  }
  times.sort((a, b) => a - b);
  out[name] = { ns: times[Math.floor(RUNS / 2)], last };
}
console.log(JSON.stringify(out));
