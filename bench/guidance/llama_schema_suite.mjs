// llama.cpp (node-llama-cpp 3.21.1, its prebuilt CPU library) answering a list of prompts on one GGUF,
// each from the same token ids the other runtimes get, greedy, constrained by llama.cpp's own
// JSON-schema grammar (llama.createGrammarForJsonSchema) or free. One JSON line per case: tokens,
// decode ms/token between the first and the last generated token (prefill excluded), whether it
// stopped by itself (end of generation, not the token limit), and the text.
//   node bench/guidance/llama_schema_suite.mjs MODEL.gguf CASES.json [--threads T] [--max N] [--free]
// CASES.json: [{"name": ..., "ids": [token ids of the prompt], "schema": {...}}, ...]
import fs from 'node:fs';
import { loadLlama } from '../peers/llama_load.mjs';

const args = process.argv.slice(2);
const opt = (name, def) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : def; };
const [file, casesFile] = args;
if (!file || !casesFile) {
  console.error('usage: llama_schema_suite.mjs MODEL.gguf CASES.json [--threads T] [--max N] [--free]');
  process.exit(2);
}
const T = Number(opt('--threads', '1')), maxTokens = Number(opt('--max', '200')), free = args.includes('--free');
const cases = JSON.parse(fs.readFileSync(casesFile, 'utf8'));
const { lib, llama } = await loadLlama(T);
const model = await llama.loadModel({ modelPath: file, gpuLayers: 0, useMmap: false });
const ctx = await model.createContext({ contextSize: 2048, threads: { ideal: T, min: T } });
const sequence = ctx.getSequence();
const completion = new lib.LlamaCompletion({ contextSequence: sequence });
for (const c of cases) {
  await sequence.clearHistory();
  let grammar;
  let error = null;
  if (!free) {
    try { grammar = await llama.createGrammarForJsonSchema(c.schema); } catch (e) { error = String(e.message || e); }
  }
  if (error) {
    console.log(JSON.stringify({ name: c.name, error }));
    continue;
  }
  const stamps = [];
  const r = await completion.generateCompletionWithMeta(c.ids, {
    grammar, maxTokens, temperature: 0,
    onToken: (toks) => { for (let i = 0; i < toks.length; i++) stamps.push(performance.now()); },
  });
  const n = stamps.length;
  console.log(JSON.stringify({ name: c.name, tokens: n,
    ms_per_token: n > 1 ? (stamps[n - 1] - stamps[0]) / (n - 1) : null,
    finished: r.metadata.stopReason !== 'maxTokens', stop_reason: r.metadata.stopReason, text: r.response }));
}
await completion.dispose?.();
await ctx.dispose(); await model.dispose(); await llama.dispose();
