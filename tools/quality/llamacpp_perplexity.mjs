// llama.cpp's perplexity (node-llama-cpp 3.21.1, CPU, 1 thread) of a GGUF on a text, by the rule
// of `nbits perplexity` (src/cli/perplexity.cc; llama-perplexity's): the text tokenized by
// llama.cpp without special tokens; windows of ctx tokens every ctx tokens (at most CHUNKS), each
// from an empty cache, its first token -> BOS when the tokenizer adds one; positions p >= ctx/2
// scored with -log p(token at p | window before p), from controlledEvaluate's full probability
// list at temperature 1 (no top-k/top-p/min-p).
//   node tools/quality/llamacpp_perplexity.mjs MODEL.gguf TEXT OUT.json [CTX [CHUNKS]]
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const [file, textFile, out, ctxArg, chunksArg] = process.argv.slice(2);
if (!file || !textFile || !out) {
  console.error('usage: llamacpp_perplexity.mjs MODEL.gguf TEXT OUT.json [CTX [CHUNKS]]');
  process.exit(2);
}
const ctx = Number(ctxArg ?? 512);
const lib = await import(path.join(here, '../../bench/peers/.deps/node_modules/node-llama-cpp/dist/index.js'));
const llama = await lib.getLlama({ gpu: false, build: 'never', usePrebuiltBinaries: true, skipDownload: true,
  logLevel: lib.LlamaLogLevel.error, maxThreads: 1, progressLogs: false });
const model = await llama.loadModel({ modelPath: file, gpuLayers: 0 });
const ids = Array.from(model.tokenize(fs.readFileSync(textFile, 'utf8'), false));
const probe = Array.from(model.tokenize('a', true));
const bos = model.tokens.bos != null && probe[0] === model.tokens.bos ? model.tokens.bos : -1;
let windows = Math.floor((ids.length - ctx) / ctx) + 1;
if (chunksArg) windows = Math.min(windows, Number(chunksArg));
const context = await model.createContext({ contextSize: ctx, batchSize: ctx, sequences: 1,
  threads: { ideal: 1, min: 1 } });
const seq = context.getSequence();
const opts = { temperature: 1, topK: 0, topP: 1, minP: 0 };
const half = Math.floor(ctx / 2);
const nll = [];
for (let w = 0; w < windows; w++) {
  const win = ids.slice(w * ctx, (w + 1) * ctx);
  if (bos >= 0) win[0] = bos;
  await seq.clearHistory();
  // Rows p-1 (p = half .. ctx-1) carry the distribution of the token at p.
  const input = win.slice(0, ctx - 1).map((t, i) =>
    i >= half - 1 ? [t, { generateNext: { probabilities: true, options: opts } }] : t);
  const res = await seq.controlledEvaluate(input);
  for (let p = half; p < ctx; p++) {
    const probs = res[p - 1].next.probabilities;
    const q = probs.get(win[p]);
    nll.push(q > 0 ? -Math.log(q) : Infinity);
  }
  process.stderr.write(`[${w + 1}/${windows}]\n`);
}
const n = nll.length;
const mean = nll.reduce((a, b) => a + b, 0) / n;
const sd = Math.sqrt(nll.reduce((a, x) => a + (x - mean) ** 2, 0) / (n - 1));
const ppl = Math.exp(mean);
fs.writeFileSync(out, JSON.stringify({ runtime: 'llama.cpp (node-llama-cpp 3.21.1, CPU, 1 thread)',
  model: path.basename(file), ppl, ppl_err: ppl * sd / Math.sqrt(n), tokens: ids.length, tokens_scored: n,
  windows, ctx, bos: bos >= 0 }));
await context.dispose(); await model.dispose(); await llama.dispose();
