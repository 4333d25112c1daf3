// Shared helpers: load onnxruntime-node from bench/peers/.deps and drive a genai
// decoder graph the "share-buffer-free" way (present KV fed back as next past).
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '.deps', 'package.json'));

export function loadOrt() {
  try {
    return require('onnxruntime-node');
  } catch (e) {
    console.error(`onnxruntime-node not found under ${here}/.deps: run bash bench/peers/install.sh`);
    process.exit(3);
  }
}

export function readGenaiConfig(dir) {
  const c = JSON.parse(fs.readFileSync(path.join(dir, 'genai_config.json'), 'utf8'));
  const d = c.model.decoder;
  return { layers: d.num_hidden_layers, kvHeads: d.num_key_value_heads, headSize: d.head_size,
           vocab: c.model.vocab_size };
}

export async function createSession(ort, dir, threads) {
  return ort.InferenceSession.create(path.join(dir, 'model.onnx'), {
    intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: 'all', enableCpuMemArena: true });
}

// A decoder state: past KV tensors (empty at start) and the token count.
export class Decoder {
  constructor(ort, session, cfg) {
    this.ort = ort; this.s = session; this.cfg = cfg; this.len = 0;
    this.past = [];
    for (let i = 0; i < cfg.layers; i++)
      for (const kv of ['key', 'value'])
        this.past.push(new ort.Tensor('float32', new Float32Array(0), [1, cfg.kvHeads, 0, cfg.headSize]));
  }
  // Runs ids on top of the cache; returns the logits tensor [1, S, V].
  async step(ids) {
    const ort = this.ort, S = ids.length, T = this.len + S;
    const feeds = {
      input_ids: new ort.Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, S]),
      attention_mask: new ort.Tensor('int64', new BigInt64Array(T).fill(1n), [1, T]) };
    let k = 0;
    for (let i = 0; i < this.cfg.layers; i++)
      for (const kv of ['key', 'value']) feeds[`past_key_values.${i}.${kv}`] = this.past[k++];
    const out = await this.s.run(feeds);
    k = 0;
    for (let i = 0; i < this.cfg.layers; i++)
      for (const kv of ['key', 'value']) this.past[k++] = out[`present.${i}.${kv}`];
    this.len = T;
    return out.logits;
  }
}

export function parseArgs(argv, defaults) {
  const a = { ...defaults, _: [] };
  for (let i = 0; i < argv.length; i++) {
    const m = argv[i].match(/^--([\w-]+)(?:=(.*))?$/);
    if (!m) { a._.push(argv[i]); continue; }
    // A flag with no value (last, or followed by another --flag) is a switch: 'true'.
    const next = argv[i + 1];
    a[m[1]] = m[2] !== undefined ? m[2] : next === undefined || next.startsWith('--') ? 'true' : argv[++i];
  }
  return a;
}
