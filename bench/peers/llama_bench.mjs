// llama.cpp (node-llama-cpp 3.21.1, prebuilt CPU backend) on a GGUF: prefill P ids (logits of the
// last only) then decode N tokens greedily (temperature 0), use_mmap = false, T threads.
//   node bench/peers/llama_bench.mjs MODEL.gguf [--threads 1] [--prompt 128] [--decode 64] [--reps 3]
// Timings are around controlledEvaluate() (includes native greedy sampling and the JS binding).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from './ort_common.mjs';
import { summary, promptIds } from './stats.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const a = parseArgs(process.argv.slice(2), { threads: '1', prompt: '128', decode: '64', reps: '3', vocab: '0' });
const file = a._[0];
if (!file) { console.error('usage: llama_bench.mjs MODEL.gguf [--threads T] [--prompt P] [--decode N] [--reps R]'); process.exit(2); }
const T = Number(a.threads), P = Number(a.prompt), N = Number(a.decode), R = Number(a.reps);
let lib;
try {
  lib = await import(path.join(here, '.deps/node_modules/node-llama-cpp/dist/index.js'));
} catch (e) {
  console.error(`node-llama-cpp not found under ${here}/.deps: run bash bench/peers/install.sh (${e.message})`);
  process.exit(3);
}
const llama = await lib.getLlama({ gpu: false, build: 'never', usePrebuiltBinaries: true, skipDownload: true,
  logLevel: lib.LlamaLogLevel.error, maxThreads: T, progressLogs: false });
let t0 = performance.now();
const model = await llama.loadModel({ modelPath: file, gpuLayers: 0, useMmap: false });
const ctx = await model.createContext({ contextSize: P + N + 32, batchSize: Math.max(P, 32), sequences: 1,
  threads: { ideal: T, min: T } });
const loadMs = performance.now() - t0;
const seq = ctx.getSequence();
const vocab = Number(a.vocab) || model.fileInfo?.metadata?.tokenizer?.ggml?.tokens?.length || 0;
if (!vocab) { console.error('llama_bench.mjs: cannot tell the vocabulary size; pass --vocab V'); process.exit(2); }
const gen = (tok) => [tok, { generateNext: { token: true, options: { temperature: 0 } } }];
async function rep(p, n, pre, dec) {
  await seq.clearHistory();
  const ids = promptIds(p, vocab);
  let t = performance.now();
  let out = await seq.controlledEvaluate([...ids.slice(0, -1), gen(ids[ids.length - 1])]);
  if (pre) pre.push(performance.now() - t);
  let next = out[out.length - 1].next.token;
  for (let i = 0; i < n; i++) {
    t = performance.now();
    out = await seq.controlledEvaluate([gen(next)]);
    if (dec) dec.push(performance.now() - t);
    next = out[0].next.token;
  }
}
await rep(Math.min(P, 8), 4, null, null);  // warm-up
const pre = [], dec = [];
for (let r = 0; r < R; r++) await rep(P, N, pre, dec);
console.log(JSON.stringify(summary({ runtime: 'llama.cpp', version: 'node-llama-cpp 3.21.1', model: file,
  threads: T, load_ms: loadMs, vocab: Number(vocab) }, P, pre, dec)));
await ctx.dispose(); await model.dispose(); await llama.dispose();
