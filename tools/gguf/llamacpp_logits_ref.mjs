// llama.cpp's reference for tests/gguf/llama_cpp_agreement_test.cc: for 10 fixed prompts (token
// ids, so no tokenizer is involved) the first-step log-probabilities over the whole vocabulary and
// 32 greedy tokens with the top-2 log-probabilities of every step, from node-llama-cpp 3.21.1
// (llama.cpp, prebuilt CPU backend, 1 thread).
//   node tools/gguf/llamacpp_logits_ref.mjs MODEL.gguf OUT.json [PROMPTS.json]
// PROMPTS.json: a JSON array of texts, tokenized by llama.cpp with its special tokens (for models
// of another vocabulary than SmolLM2's); the ids are written to OUT.json.
// Log-probabilities come from controlledEvaluate's full probability list at temperature 1 (no
// top-k/top-p/min-p): log p = logit - logsumexp(logits), so differences of logits are kept.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const [file, out, promptsFile] = process.argv.slice(2);
if (!file || !out) { console.error('usage: llamacpp_logits_ref.mjs MODEL.gguf OUT.json [PROMPTS.json]'); process.exit(2); }
const lib = await import(path.join(here, '../../bench/peers/.deps/node_modules/node-llama-cpp/dist/index.js'));
// SmolLM2 ids of 10 texts (prose, code, a chat turn, digits, a list).
let prompts = [
  [504, 3575, 282, 4649, 314],
  [1604, 3987, 46477, 24, 94, 727],
  [6403, 1980, 253, 655, 28, 281, 253, 1165, 6560, 28],
  [504, 2365, 6354, 16438, 27003, 690, 260, 23790, 2767, 30, 378, 2365, 6354],
  [33, 28, 216, 34, 28, 216, 35, 28, 216, 36, 28, 216, 37, 28],
  [1, 4093, 198, 1780, 314, 260, 16891, 1225, 282, 913, 47, 2, 198, 1, 520, 9531, 198],
  [33580, 14870, 314, 260, 980, 411, 527],
  [2017, 6772, 347, 2333, 198, 104, 446, 2333, 30, 4282, 4151],
  [504, 1296, 3003, 4683, 359],
  [788, 216, 33, 41, 38, 41, 28, 27639, 24955],
];
const steps = 32;
const llama = await lib.getLlama({ gpu: false, build: 'never', usePrebuiltBinaries: true, skipDownload: true,
  logLevel: lib.LlamaLogLevel.error, maxThreads: 1, progressLogs: false });
const model = await llama.loadModel({ modelPath: file, gpuLayers: 0 });
if (promptsFile) prompts = JSON.parse(fs.readFileSync(promptsFile, 'utf8')).map((t) => Array.from(model.tokenize(t, true)));
const ctx = await model.createContext({ contextSize: 128, batchSize: 64, sequences: 1, threads: { ideal: 1, min: 1 } });
const seq = ctx.getSequence();
const vocab = model.fileInfo.metadata.tokenizer.ggml.tokens.length;
const opts = { temperature: 1, topK: 0, topP: 1, minP: 0 };
const next = (tok) => [tok, { generateNext: { probabilities: true, options: opts } }];
const logprobs = (probs) => {
  const lp = new Array(vocab).fill(null);  // null: probability 0 in float32
  for (const [t, p] of probs) if (p > 0) lp[t] = Math.log(p);
  return lp;
};
const top2 = (lp) => {
  let a = -1, b = -1;
  for (let t = 0; t < lp.length; t++) {
    if (lp[t] === null) continue;
    if (a < 0 || lp[t] > lp[a]) { b = a; a = t; } else if (b < 0 || lp[t] > lp[b]) b = t;
  }
  return [a, b];
};
const cases = [];
for (const ids of prompts) {
  await seq.clearHistory();
  let res = await seq.controlledEvaluate([...ids.slice(0, -1), next(ids[ids.length - 1])]);
  let lp = logprobs(res[res.length - 1].next.probabilities);
  const first = lp.map((x) => (x === null ? null : Number(x.toFixed(5))));
  const greedy = [], margins = [];
  for (let s = 0; s < steps; s++) {
    const [a, b] = top2(lp);
    greedy.push(a);
    margins.push(lp[a] - lp[b]);
    if (s + 1 === steps) break;
    res = await seq.controlledEvaluate([next(a)]);
    lp = logprobs(res[0].next.probabilities);
  }
  cases.push({ prompt_ids: ids, first_logprobs: first, greedy, top2_margins: margins });
}
fs.writeFileSync(out, JSON.stringify({ runtime: 'llama.cpp (node-llama-cpp 3.21.1, CPU, 1 thread)', model: path.basename(file),
  vocab, cases }));
await ctx.dispose(); await model.dispose(); await llama.dispose();
