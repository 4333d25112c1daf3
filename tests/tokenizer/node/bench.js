// Times the Hugging Face tokenizers library (Rust, via @anush008/tokenizers) on the text that
// bench/tokenizer_encode.cc uses: the qwen2.5 case strings joined by "\n", repeated to >= 1 MiB.
// usage: node bench.js [SHARED_DIR]   (single thread: RAYON_NUM_THREADS=1 is set below)
process.env.RAYON_NUM_THREADS = '1';
process.env.TOKENIZERS_PARALLELISM = 'false';
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('@anush008/tokenizers');

const shared = process.argv[2] || path.join(__dirname, '../../../../shared');
const cases = JSON.parse(fs.readFileSync(path.join(shared, 'tokenizers/cases/tokenizer_cases_qwen2.5.json')));
let unit = '';
for (const c of cases.cases) unit += c.text + '\n';
let text = '';
while (Buffer.byteLength(text) < (1 << 20)) text += unit;
const bytes = Buffer.byteLength(text);

function median(xs) { xs.sort((a, b) => a - b); return xs[xs.length >> 1]; }

(async () => {
  const loads = [];
  for (let i = 0; i < 5; i++) {
    const t0 = process.hrtime.bigint();
    Tokenizer.fromFile(path.join(shared, 'tokenizers/qwen2.5/tokenizer.json'));
    loads.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  console.log(`load qwen2.5: median ${median(loads).toFixed(1)} ms`);
  for (const name of ['qwen2.5', 'smollm2', 'tinyllama']) {
    const tok = Tokenizer.fromFile(path.join(shared, 'tokenizers', name, 'tokenizer.json'));
    await tok.encode(text, null, { addSpecialTokens: false });  // warm-up
    const times = [];
    for (let i = 0; i < 5; i++) {
      const t0 = process.hrtime.bigint();
      await tok.encode(text, null, { addSpecialTokens: false });
      times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    const ms = median(times);
    console.log(`encode ${name}: median ${ms.toFixed(1)} ms, ${(bytes / ms / 1e3).toFixed(2)} MB/s (${bytes} bytes)`);
  }
})();
