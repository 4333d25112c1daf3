// ONNX Runtime (onnxruntime-node 1.30) on a genai model: prefill P ids then decode N greedy tokens,
// present KV fed back as next past (no shared buffer), intraOpNumThreads = T. Prints one JSON line.
//   node bench/peers/ort_bench.mjs MODEL_DIR [--threads 1] [--prompt 128] [--decode 64] [--reps 3]
// Timings are around session.run() only (the JS binding adds ~0.2 ms per call); argmax is outside.
import { loadOrt, readGenaiConfig, createSession, Decoder, parseArgs } from './ort_common.mjs';
import { summary, promptIds } from './stats.mjs';

const a = parseArgs(process.argv.slice(2), { threads: '1', prompt: '128', decode: '64', reps: '3' });
const dir = a._[0];
if (!dir) { console.error('usage: ort_bench.mjs MODEL_DIR [--threads T] [--prompt P] [--decode N] [--reps R]'); process.exit(2); }
const T = Number(a.threads), P = Number(a.prompt), N = Number(a.decode), R = Number(a.reps);
const ort = loadOrt();
const cfg = readGenaiConfig(dir);
let t0 = performance.now();
const session = await createSession(ort, dir, T);
const loadMs = performance.now() - t0;
const argmaxLast = (t) => {
  const V = t.dims[2], d = t.data, base = (t.dims[1] - 1) * V;
  let best = 0;
  for (let i = 1; i < V; i++) if (d[base + i] > d[base + best]) best = i;
  return best;
};
async function rep(p, n, pre, dec) {
  const d = new Decoder(ort, session, cfg);
  let t = performance.now();
  let logits = await d.step(promptIds(p, cfg.vocab));
  if (pre) pre.push(performance.now() - t);
  let next = argmaxLast(logits);
  for (let i = 0; i < n; i++) {
    t = performance.now();
    logits = await d.step([next]);
    if (dec) dec.push(performance.now() - t);
    next = argmaxLast(logits);
  }
}
await rep(Math.min(P, 8), 4, null, null);  // warm-up
const pre = [], dec = [];
for (let r = 0; r < R; r++) await rep(P, N, pre, dec);
console.log(JSON.stringify(summary({ runtime: 'onnxruntime', version: '1.30.0', model: dir, threads: T,
  load_ms: loadMs }, P, pre, dec)));
