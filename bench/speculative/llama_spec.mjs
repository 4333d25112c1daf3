// llama.cpp (node-llama-cpp 3.21.1, prebuilt CPU backend) decoding the given prompt ids greedily,
// plain or with its token predictors (InputLookupTokenPredictor: prompt lookup;
// DraftSequenceTokenPredictor: a draft model), for bench/speculative/run.py --peer.
//   node bench/speculative/llama_spec.mjs MODEL.gguf IDS.json [--decode N] [--threads T]
//        [--predictor none|lookup|draft] [--draft-model DRAFT.gguf]
// Prints one JSON object: decode ms/token (after the first generated token), the ids, and the
// predictor's statistics.
import fs from 'node:fs';
import { loadLlama } from '../peers/llama_load.mjs';

const args = process.argv.slice(2);
const opt = { decode: '128', threads: '1', predictor: 'none', 'draft-model': '' };
const pos = [];
for (let i = 0; i < args.length; i++) {
  if (args[i].startsWith('--')) opt[args[i].slice(2)] = args[++i];
  else pos.push(args[i]);
}
if (pos.length !== 2) {
  console.error('usage: llama_spec.mjs MODEL.gguf IDS.json [--decode N] [--threads T] [--predictor none|lookup|draft] [--draft-model F]');
  process.exit(2);
}
const [file, idsFile] = pos;
const N = Number(opt.decode), T = Number(opt.threads);
const ids = JSON.parse(fs.readFileSync(idsFile, 'utf8'));
const { lib, llama } = await loadLlama(T);
const size = ids.length + N + 64;
const model = await llama.loadModel({ modelPath: file, gpuLayers: 0, useMmap: false });
const ctx = await model.createContext({ contextSize: size, batchSize: Math.max(ids.length, 64), sequences: 1,
  threads: { ideal: T, min: T } });
let predictor;
let draftModel, draftCtx;
if (opt.predictor === 'lookup') {
  predictor = new lib.InputLookupTokenPredictor();
} else if (opt.predictor === 'draft') {
  draftModel = await llama.loadModel({ modelPath: opt['draft-model'], gpuLayers: 0, useMmap: false });
  draftCtx = await draftModel.createContext({ contextSize: size, batchSize: Math.max(ids.length, 64), sequences: 1,
    threads: { ideal: T, min: T } });
  predictor = new lib.DraftSequenceTokenPredictor(draftCtx.getSequence());
} else if (opt.predictor !== 'none') {
  console.error(`unknown --predictor ${opt.predictor}`);
  process.exit(2);
}
const seq = ctx.getSequence(predictor ? { tokenPredictor: predictor } : {});
const out = [];
let tFirst = 0;
for await (const tok of seq.evaluate(ids, { temperature: 0 })) {
  if (out.length === 0) tFirst = performance.now();
  out.push(tok);
  if (out.length >= N) break;
}
const ms = (performance.now() - tFirst) / Math.max(1, out.length - 1);
console.log(JSON.stringify({ runtime: 'llama.cpp', version: 'node-llama-cpp 3.21.1', predictor: opt.predictor,
  threads: T, decode_ms_per_token: ms, ids: out, predictions: seq.tokenPredictions }));
await ctx.dispose();
if (draftCtx) await draftCtx.dispose();
if (draftModel) await draftModel.dispose();
await model.dispose();
await llama.dispose();
