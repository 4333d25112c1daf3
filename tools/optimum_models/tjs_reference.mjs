// transformers.js (npm @huggingface/transformers) as a second oracle for the Optimum exports:
// for each case of cases.txt whose onnx/<stem>.ref.json (ONNX Runtime, make.py) exists, loads the
// folder as a real client does (AutoModelForCausalLM.from_pretrained with remote models off, the
// case folder as a local model, dtype = the variant: fp32 -> onnx/model.onnx, q4 ->
// onnx/model_q4.onnx, ...) and runs `generate` greedily from the ORT reference's prompt for as many
// tokens as it has (EOS off: ORT's reference does not stop either). A logits processor records
// each step's top-1/top-2 margin and max|logit|, and the first step's logits. Writes
// onnx/<stem>.tjs.json: {prompt, ids, margins, max_abs_logit, first_logits, transformers_js,
// seconds}, or {no_reference: why} when transformers.js cannot load or run the file.
// A case whose tjs.json exists is skipped.
//
// usage: node tjs_reference.mjs TJS_DIR MODELS_DIR [NAME ...]
//   TJS_DIR: the npm prefix holding node_modules/@huggingface/transformers (tools/setup_models.sh)
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const [tjsDir, modelsDir, ...names] = process.argv.slice(2);
if (!tjsDir || !modelsDir) {
  console.error('usage: node tjs_reference.mjs TJS_DIR MODELS_DIR [NAME ...]');
  process.exit(2);
}
const tjsRoot = path.join(path.resolve(tjsDir), 'node_modules', '@huggingface', 'transformers');
const tjsPkg = JSON.parse(fs.readFileSync(path.join(tjsRoot, 'package.json'), 'utf8'));
const tjs = await import(path.join(tjsRoot, 'dist', 'transformers.node.mjs'));
const { env, AutoModelForCausalLM, Tensor, LogitsProcessor, LogitsProcessorList } = tjs;
env.allowRemoteModels = false;
env.allowLocalModels = true;
env.localModelPath = path.resolve(modelsDir) + '/';
env.useBrowserCache = false;
env.useFSCache = false;

const here = path.dirname(fileURLToPath(import.meta.url));
const FILES = { fp32: 'model', fp16: 'model_fp16', q4: 'model_q4', q4f16: 'model_q4f16', int8: 'model_int8' };
const cases = [];
for (const line of fs.readFileSync(path.join(here, 'cases.txt'), 'utf8').split('\n')) {
  const parts = line.split('#')[0].trim().split(/\s+/).filter(Boolean);
  if (parts.length >= 3) cases.push({ name: parts[0], variants: parts.slice(2) });
}

// Records what generate's greedy step sees (the logits of the last position, as float32).
class Recorder extends LogitsProcessor {
  constructor() {
    super();
    this.margins = [];
    this.maxabs = [];
    this.first = null;
  }
  _call(inputIds, logits) {
    const row = logits.data; // [1, vocab]
    let a = -Infinity, b = -Infinity, m = 0;
    for (let i = 0; i < row.length; ++i) {
      const x = row[i];
      if (x > a) { b = a; a = x; } else if (x > b) b = x;
      m = Math.max(m, Math.abs(x));
    }
    if (this.first === null) this.first = Array.from(row);
    this.margins.push(a - b);
    this.maxabs.push(m);
    return logits;
  }
}

function oneLine(e) {
  return String(e && e.message ? e.message : e).split('\n')[0].slice(0, 300);
}

let failed = 0;
for (const c of cases) {
  if (names.length && !names.includes(c.name)) continue;
  const onnxDir = path.join(modelsDir, c.name, 'onnx');
  for (const v of c.variants) {
    const stem = FILES[v];
    const refPath = path.join(onnxDir, stem + '.ref.json');
    const outPath = path.join(onnxDir, stem + '.tjs.json');
    if (!fs.existsSync(refPath) || fs.existsSync(outPath)) continue;
    const ref = JSON.parse(fs.readFileSync(refPath, 'utf8'));
    const prompt = ref.prompt;
    const steps = ref.ids ? ref.ids.length : 40;
    const out = { case: c.name, variant: v, file: stem + '.onnx', prompt, transformers_js: tjsPkg.version };
    const t0 = Date.now();
    let model = null;
    try {
      try {
        model = await AutoModelForCausalLM.from_pretrained(c.name, { dtype: v, device: 'cpu' });
      } catch (e) {
        throw new Error(`transformers.js ${tjsPkg.version} cannot load it: ${oneLine(e)}`);
      }
      const rec = new Recorder();
      const procs = new LogitsProcessorList();
      procs.push(rec);
      const input_ids = new Tensor('int64', BigInt64Array.from(prompt.map(BigInt)), [1, prompt.length]);
      const attention_mask = new Tensor('int64', new BigInt64Array(prompt.length).fill(1n), [1, prompt.length]);
      let seq;
      try {
        seq = await model.generate({
          input_ids, attention_mask, max_new_tokens: steps, min_new_tokens: null, do_sample: false,
          num_beams: 1, eos_token_id: null, repetition_penalty: 1.0, no_repeat_ngram_size: 0,
          logits_processor: procs,
        });
      } catch (e) {
        throw new Error(`transformers.js ${tjsPkg.version} cannot run it: ${oneLine(e)}`);
      }
      const ids = seq.tolist()[0].slice(prompt.length).map(Number);
      if (!rec.first || !rec.first.every(Number.isFinite)) throw new Error('non-finite first-step logits');
      Object.assign(out, { ids, margins: rec.margins, max_abs_logit: rec.maxabs, first_logits: rec.first });
    } catch (e) {
      out.no_reference = oneLine(e);
      ++failed;
    } finally {
      if (model) await model.dispose();
    }
    out.seconds = (Date.now() - t0) / 1000;
    fs.writeFileSync(outPath + '.tmp', JSON.stringify(out));
    fs.renameSync(outPath + '.tmp', outPath);
    let agree = '';
    if (out.ids && ref.ids) {
      let k = 0;
      while (k < out.ids.length && out.ids[k] === ref.ids[k]) ++k;
      agree = `, greedy ${k}/${ref.ids.length} equal to ORT's`;
    }
    console.log(`transformers.js ${c.name}/${stem}.onnx: ${out.no_reference ? 'no reference: ' + out.no_reference
      : 'ok'}${agree} (${out.seconds.toFixed(1)} s)`);
  }
}
if (failed) console.log(`transformers.js could not run ${failed} file(s) (recorded as no_reference)`);
