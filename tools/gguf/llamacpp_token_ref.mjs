// llama.cpp's own tokenization of the shared tokenizer cases, as a reference file for the tests:
//   node tools/gguf/llamacpp_token_ref.mjs MODEL.gguf CASES.json OUT.json
// Needs node-llama-cpp 3.21.1 (bash bench/peers/install.sh); a vocab-only GGUF is enough (llama.cpp may
// log a missing-tensor error for it and still load the vocabulary). For every case text: ids with
// parse_special (control tokens in the text are matched, as Hugging Face's added tokens are) and
// without; never BOS/EOS (node-llama-cpp calls common_tokenize(vocab, text, add_special=false, ...)).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const [file, casesPath, out] = process.argv.slice(2);
if (!out) { console.error('usage: llamacpp_token_ref.mjs MODEL.gguf CASES.json OUT.json'); process.exit(2); }
const lib = await import(path.join(root, 'bench/peers/.deps/node_modules/node-llama-cpp/dist/index.js'));
const llama = await lib.getLlama({ gpu: false, build: 'never', usePrebuiltBinaries: true, skipDownload: true,
  logLevel: lib.LlamaLogLevel.error, progressLogs: false });
const model = await llama.loadModel({ modelPath: file, gpuLayers: 0, vocabOnly: true });
const cases = JSON.parse(fs.readFileSync(casesPath, 'utf8')).cases;
const rows = cases.map((c) => ({
  text: c.text,
  ids_parse_special: Array.from(model.tokenize(c.text, true)),
  ids_no_parse_special: Array.from(model.tokenize(c.text, false)),
}));
const doc = { generator: 'tools/gguf/llamacpp_token_ref.mjs', runtime: 'node-llama-cpp 3.21.1',
  model: path.basename(file), cases_from: path.basename(casesPath), cases: rows };
fs.writeFileSync(out, JSON.stringify(doc, null, 1) + '\n');
console.log(`${rows.length} cases -> ${out}`);
await model.dispose(); await llama.dispose();
