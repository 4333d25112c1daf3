// llama.cpp (node-llama-cpp 3.21.1) answering one chat question on a GGUF, free or constrained by
// its JSON-schema grammar (llama.createGrammarForJsonSchema), greedy: decode ms/token between the
// first and the last generated token (prefill excluded), tokens, and whether the reply validates.
//   node bench/guidance/llama_json.mjs MODEL.gguf SCHEMA.json "question" [--threads T] [--max 128] [--free]
import fs from 'node:fs';
import { loadLlama } from '../peers/llama_load.mjs';

const args = process.argv.slice(2);
const opt = (name, def) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : def; };
const [file, schemaFile, question] = args;
if (!file || !schemaFile || !question) {
  console.error('usage: llama_json.mjs MODEL.gguf SCHEMA.json "question" [--threads T] [--max N] [--free]');
  process.exit(2);
}
const T = Number(opt('--threads', '1')), maxTokens = Number(opt('--max', '128')), free = args.includes('--free');
const { lib, llama } = await loadLlama(T);
const model = await llama.loadModel({ modelPath: file, gpuLayers: 0, useMmap: false });
const ctx = await model.createContext({ contextSize: 2048, threads: { ideal: T, min: T } });
const session = new lib.LlamaChatSession({ contextSequence: ctx.getSequence() });
const schema = JSON.parse(fs.readFileSync(schemaFile, 'utf8'));
const grammar = free ? undefined : await llama.createGrammarForJsonSchema(schema);
const stamps = [];
let text = '';
await session.prompt(question, {
  grammar, maxTokens, temperature: 0,
  onToken: (toks) => { for (let i = 0; i < toks.length; i++) stamps.push(performance.now()); },
  onTextChunk: (t) => { text += t; },
});
const n = stamps.length;
const msPerToken = n > 1 ? (stamps[n - 1] - stamps[0]) / (n - 1) : 0;
let valid = null;
try { JSON.parse(text); valid = true; } catch { valid = false; }
console.log(JSON.stringify({ runtime: 'llama.cpp', constrained: !free, threads: T, tokens: n,
  decode_ms_per_token: msPerToken, parses: valid, text }));
await ctx.dispose(); await model.dispose(); await llama.dispose();
