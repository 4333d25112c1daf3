// Alternating nbits / ONNX Runtime / onnxruntime-genai / llama.cpp benchmark on random-weight models of the
// real shapes, and on the real SmolLM2-135M-Instruct files tools/setup_models.sh makes (each runtime on
// the same file as nbits: the builder's int4 export for ORT and genai, the Q4_1 GGUF for llama.cpp).
// Resumable: every single run is cached as JSON under bench/peers/.deps/results/ and skipped when present.
//   node bench/peers/run_all.mjs [--models qwen-int4-b32,...] [--threads 1,2] [--reps 3]
//        [--prompt 128] [--decode 64] [--nbits build/nbits] [--runtimes nbits,ort,llama] [--fresh]
//        [--llama-bench PATH [--llama-bench-args '-rtr 1']]
// One "rep" = one round over every model x threads x runtime (A B C A B C ...), one prefill + decode each.
// Runtimes: nbits, nbits16 (nbits with --scales fp16: scales rounded to half precision at load), ort, genai
// (bench/peers/genai_bench.py in the cache's venv: og.Generator), llama, ik (a llama-bench binary given by
// --llama-bench, e.g. ik_llama.cpp's built by hand outside the repository: bench/peers/llama_bench_cli.mjs;
// its decode figure is llama-bench's mean per token after the same prompt).
// Peak RSS of each process comes from /usr/bin/time when it is installed (Debian package `time`); the
// peers' figure includes node itself (about 45 MiB).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from './ort_common.mjs';
import { percentile } from './stats.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const deps = path.join(here, '.deps');
const cache = process.env.NBITS_CACHE || path.join(process.env.HOME || '/root', '.cache/nbits');
const builderModels = process.env.NBITS_BUILDER_MODELS || path.join(cache, 'builder-models');
const venvPython = path.join(cache, 'venv/bin/python');
// Real weights: `dir` (a genai folder) or `file` (a GGUF) used as they are, nothing generated.
const MODELS = {
  'smollm2-135m-real-int4': { dir: path.join(builderModels, 'smollm2_int4'), gguf: null },
  'smollm2-135m-real-q4_1': { file: path.join(cache, 'smollm2/SmolLM2-135M-Instruct.Q4_1.gguf'), gguf: 'Q4_1' },
  'qwen2.5-coder-0.5b-real-q4_k_m': { file: path.join(cache, 'qwen25-coder/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf'), gguf: 'Q4_K_M' },
  // bench/peers/fetch_real_gguf.sh fetches the 1.5B file (the 0.5B one comes with tools/setup_models.sh).
  'qwen2.5-coder-1.5b-real-q4_k_m': { file: path.join(cache, 'qwen25-coder/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf'), gguf: 'Q4_K_M' },
  // Random weights of OLMoE-1B-7B's shapes (mixture of experts, 64 x top-8): tools/gguf/make_moe_bench_model.py.
  'olmoe-1b-7b-random-q4_k_m': { file: path.join(cache, 'moe-bench/olmoe-1b-7b-random-q4_k_m.gguf'), gguf: 'Q4_K_M',
    make: 'tools/gguf/make_moe_bench_model.py' },
  // gpt-oss-20b's shapes (32 x top-4, MXFP4 experts, sinks, windows; SmolLM2's vocabulary), about 11 GB.
  'gpt-oss-20b-random-mxfp4': { file: path.join(cache, 'moe-bench/gpt-oss-20b-random-mxfp4.gguf'), gguf: 'MXFP4',
    make: 'tools/gguf/make_moe_bench_model.py', makeArgs: ['--arch', 'gpt-oss'] },
  // Qwen3-30B-A3B's shapes (128 x top-8, per-head q/k norms), about 19.5 GB; its first 24 layers, 9.8 GB.
  'qwen3-30b-a3b-random-q4_k_m': { file: path.join(cache, 'moe-bench/qwen3-30b-a3b-random-q4_k_m.gguf'), gguf: 'Q4_K_M',
    make: 'tools/gguf/make_moe_bench_model.py', makeArgs: ['--arch', 'qwen3moe'] },
  'qwen3-30b-a3b-24l-random-q4_k_m': { file: path.join(cache, 'moe-bench/qwen3-30b-a3b-24l-random-q4_k_m.gguf'), gguf: 'Q4_K_M',
    make: 'tools/gguf/make_moe_bench_model.py', makeArgs: ['--arch', 'qwen3moe', '--layers', '24'] },
  // Granite-3.1-3B-A800M's shapes (40 x top-8, Granite's multipliers, tied output), about 2 GB.
  'granite-3b-a800m-random-q4_k_m': { file: path.join(cache, 'moe-bench/granite-3b-a800m-random-q4_k_m.gguf'), gguf: 'Q4_K_M',
    make: 'tools/gguf/make_moe_bench_model.py', makeArgs: ['--arch', 'granitemoe'] },
  'qwen-int4-b32': { arch: 'qwen2.5-0.5b', bits: 4, block: 32, tok: 'qwen2.5', gguf: 'Q4_0' },
  'qwen-int4-b128': { arch: 'qwen2.5-0.5b', bits: 4, block: 128, tok: 'qwen2.5', gguf: null },
  'qwen-int8-b32': { arch: 'qwen2.5-0.5b', bits: 8, block: 32, tok: 'qwen2.5', gguf: 'Q8_0' },
  'smollm2-int4-b32': { arch: 'smollm2-360m', bits: 4, block: 32, tok: 'smollm2', gguf: 'Q4_0' },
  'smollm2-int8-b32': { arch: 'smollm2-360m', bits: 8, block: 32, tok: 'smollm2', gguf: 'Q8_0' },
  'tinyllama-int4-b32': { arch: 'tinyllama-1.1b', bits: 4, block: 32, tok: 'tinyllama', gguf: 'Q4_0' },
};
const a = parseArgs(process.argv.slice(2), { models: Object.keys(MODELS).filter((k) => !MODELS[k].file && !MODELS[k].dir).join(','), threads: '1,2', reps: '3',
  prompt: '128', decode: '64', nbits: path.join(root, 'build/nbits'), runtimes: 'nbits,ort,llama' });
// Default: the random-weight models; the real ones when named (--models smollm2-135m-real-int4,...).
const models = a.models.split(',');
for (const m of models) if (!MODELS[m]) { console.error(`unknown model '${m}' (${Object.keys(MODELS)})`); process.exit(2); }
const threads = a.threads.split(',').map(Number), reps = Number(a.reps), P = Number(a.prompt), N = Number(a.decode);
const runtimes = a.runtimes.split(',');
const nbits = path.resolve(a.nbits);
if (!fs.existsSync(nbits)) { console.error(`no nbits binary at ${nbits} (build it, or pass --nbits)`); process.exit(2); }
const resDir = path.join(deps, 'results'), modelDir = path.join(deps, 'models');
fs.mkdirSync(resDir, { recursive: true }); fs.mkdirSync(modelDir, { recursive: true });
const log = (m) => process.stderr.write(`run_all: ${m}\n`);
const run = (cmd, args) => execFileSync(cmd, args, { encoding: 'utf8', maxBuffer: 1 << 28,
  stdio: ['ignore', 'pipe', 'inherit'] });
const gnuTime = fs.existsSync('/usr/bin/time') ? '/usr/bin/time' : null;
// Runs cmd and returns [stdout, peak RSS in MiB or undefined].
function runMeasured(cmd, args) {
  if (!gnuTime) return [run(cmd, args), undefined];
  const rssFile = path.join(resDir, '.rss');
  const out = run(gnuTime, ['-f', '%M', '-o', rssFile, cmd, ...args]);
  return [out, Number(fs.readFileSync(rssFile, 'utf8').trim().split('\n').pop()) / 1024];
}

// 1. Models (generated once; a folder is complete when its marker file exists).
for (const key of models) {
  const m = MODELS[key], dir = path.join(modelDir, key);
  if (m.dir || m.file) {
    const p = m.dir || m.file;
    if (!fs.existsSync(p) && m.make) {
      log(`making ${key}`);
      run(venvPython, [path.join(root, m.make), path.join(cache, 'smollm2/SmolLM2-135M-Instruct.Q4_1.gguf'), p,
        ...(m.makeArgs || [])]);
    }
    if (!fs.existsSync(p)) { console.error(`${key}: ${p} is missing (run bash tools/setup_models.sh)`); process.exit(2); }
    continue;
  }
  const shared = path.join(root, '../shared/tokenizers', m.tok);
  const tokArgs = fs.existsSync(shared) ? ['--tokenizer-from', shared] : [];
  if (!fs.existsSync(path.join(dir, '.complete'))) {
    log(`making ${key}`);
    run(nbits, ['make-model', '--arch', m.arch, '--bits', String(m.bits), '--block', String(m.block), '--quiet',
      ...tokArgs, '-o', dir]);
    fs.writeFileSync(path.join(dir, '.complete'), '');
  }
  if (m.gguf && (runtimes.includes('llama') || runtimes.includes('ik')) && !fs.existsSync(path.join(dir, 'model.gguf.complete'))) {
    log(`making ${key} GGUF (${m.gguf})`);
    run(nbits, ['make-model', '--arch', m.arch, '--bits', String(m.bits), '--quiet', ...tokArgs,
      '--gguf', path.join(dir, 'model.gguf'), '--gguf-only']);
    fs.writeFileSync(path.join(dir, 'model.gguf.complete'), '');
  }
}

// 2. Bandwidth (once, cached) for the floor.
const bwFile = path.join(resDir, `bandwidth-t${threads.join('_')}.json`);
if (a.fresh !== undefined || !fs.existsSync(bwFile)) {
  log('measuring bandwidth');
  fs.writeFileSync(bwFile, run(nbits, ['roofline', '-t', threads.join(','), '--format', 'json', '--context',
    String(P + N / 2)]));
}
const roof = JSON.parse(fs.readFileSync(bwFile, 'utf8'));
const bw = Object.fromEntries(roof.bandwidth.map((b) => [b.threads, b.median_gbs]));

// 3. Alternating rounds.
function once(rt, key, t, rep) {
  const file = path.join(resDir, `${key}-t${t}-p${P}-n${N}-${rt}-r${rep}.json`);
  if (a.fresh === undefined && fs.existsSync(file)) return;
  const m = MODELS[key], dir = m.dir || m.file || path.join(modelDir, key);
  const gguf = m.file || path.join(dir, 'model.gguf');
  let out, rss;
  if ((rt === 'llama' || rt === 'ik') && !m.gguf) return;
  if ((rt === 'ort' || rt === 'genai') && m.file) return;  // a GGUF: llama.cpp's file, not ORT's
  log(`round ${rep}: ${rt} ${key} ${t} thread(s)`);
  try {
    if (rt === 'nbits' || rt === 'nbits16') {
      const extra = rt === 'nbits16' ? ['--scales', 'fp16'] : [];
      const [txt, r] = runMeasured(nbits, ['bench', '-m', dir, '-t', String(t), '-p', String(P), '-n', String(N),
        '--reps', '1', '--format', 'json', '--bandwidth-gbs', String(bw[t]), ...extra]);
      out = { runtime: rt, ...JSON.parse(txt).runs[0] }, rss = r;
    } else if (rt === 'genai') {
      const [txt, r] = runMeasured(venvPython, [path.join(here, 'genai_bench.py'), dir, '--threads', String(t),
        '--prompt', String(P), '--decode', String(N), '--reps', '1']);
      out = JSON.parse(txt), rss = r;
    } else if (rt === 'ort') {
      const [txt, r] = runMeasured('node', [path.join(here, 'ort_bench.mjs'), dir, '--threads', String(t),
        '--prompt', String(P), '--decode', String(N), '--reps', '1']);
      out = JSON.parse(txt), rss = r;
    } else if (rt === 'ik') {
      if (!a['llama-bench']) { log('runtime ik needs --llama-bench PATH'); process.exit(2); }
      const [txt, r] = runMeasured('node', [path.join(here, 'llama_bench_cli.mjs'), path.resolve(a['llama-bench']), gguf,
        '--threads', String(t), '--prompt', String(P), '--decode', String(N), '--reps', '1',
        ...(a['llama-bench-args'] !== undefined ? ['--args', a['llama-bench-args']] : [])]);
      out = JSON.parse(txt), rss = r;
    } else {
      const [txt, r] = runMeasured('node', [path.join(here, 'llama_bench.mjs'), gguf,
        '--threads', String(t), '--prompt', String(P), '--decode', String(N), '--reps', '1']);
      out = JSON.parse(txt), rss = r;
    }
    if (rss !== undefined) out.process_peak_rss_mib = rss;
  } catch (e) {
    log(`FAILED ${rt} ${key} ${t}: ${e.message.split('\n')[0]}`);
    return;
  }
  fs.writeFileSync(file, JSON.stringify(out));
}
for (let rep = 1; rep <= reps; rep++)
  for (const key of models) for (const t of threads) for (const rt of runtimes) once(rt, key, t, rep);

// 4. Table of medians (decode: median over every token of every round; prefill: median of rounds).
const rows = [];
for (const key of models) for (const t of threads) {
  const row = { model: key, ...MODELS[key], threads: t, bandwidth_gbs: bw[t] };
  for (const rt of ['nbits', 'nbits16', 'ort', 'genai', 'llama', 'ik']) {
    const runs = [];
    for (let rep = 1; rep <= reps; rep++) {
      const f = path.join(resDir, `${key}-t${t}-p${P}-n${N}-${rt}-r${rep}.json`);
      if (fs.existsSync(f)) runs.push(JSON.parse(fs.readFileSync(f, 'utf8')));
    }
    if (!runs.length) continue;
    row[rt] = { rounds: runs.length, decode_ms: percentile(runs.flatMap((r) => r.decode_ms_all), 0.5),
      prefill_tok_s: percentile(runs.map((r) => r.prefill_tok_s), 0.5),
      peak_rss_mib: runs[0].process_peak_rss_mib };
    if (rt === 'nbits') row.floor_ms = runs[0].floor_ms, row.bytes_per_token = runs[0].bytes_per_token;
    if (rt === 'nbits16') row.floor16_ms = runs[0].floor_ms;
  }
  rows.push(row);
}
const f2 = (x) => (x === undefined ? '-' : x.toFixed(2)), f0 = (x) => (x === undefined ? '-' : x.toFixed(0));
const ratio = (x, y) => (x && y ? (y / x).toFixed(2) + 'x' : '-');
const with16 = runtimes.includes('nbits16'), withGenai = runtimes.includes('genai'), withIk = runtimes.includes('ik');
console.log(`prompt ${P}, decode ${N}, ${reps} round(s); decode ms/token medians; ratio = peer ms / nbits ms ` +
  '(> 1: nbits faster); floor = bytes/token / measured read bandwidth');
console.log('| model | T | nbits ms | ORT ms | llama.cpp ms | ORT/nbits | llama/nbits | floor ms | nbits % floor |' +
  ' prefill tok/s nbits / ORT / llama.cpp | peak RSS MiB nbits / ORT / llama.cpp |' +
  (with16 ? ' nbits fp16-scales ms | ORT/it | llama/it | its % floor |' : '') +
  (withGenai ? ' genai ms | genai/nbits | genai prefill tok/s | genai peak RSS MiB |' : '') +
  (withIk ? ' ik ms | ik/nbits | ik prefill tok/s | nbits/ik prefill | ik peak RSS MiB |' : ''));
console.log('|---|---|---|---|---|---|---|---|---|---|---|' + (with16 ? '---|---|---|---|' : '') +
  (withGenai ? '---|---|---|---|' : '') + (withIk ? '---|---|---|---|---|' : ''));
for (const r of rows)
  console.log(`| ${r.model}${r.gguf ? ` (${r.gguf})` : ''} | ${r.threads} | ${f2(r.nbits?.decode_ms)} | ` +
    `${f2(r.ort?.decode_ms)} | ${f2(r.llama?.decode_ms)} | ${ratio(r.nbits?.decode_ms, r.ort?.decode_ms)} | ` +
    `${ratio(r.nbits?.decode_ms, r.llama?.decode_ms)} | ${f2(r.floor_ms)} | ` +
    `${r.floor_ms && r.nbits ? f0(100 * r.floor_ms / r.nbits.decode_ms) : '-'} | ` +
    `${f0(r.nbits?.prefill_tok_s)} / ${f0(r.ort?.prefill_tok_s)} / ${f0(r.llama?.prefill_tok_s)} | ` +
    `${f0(r.nbits?.peak_rss_mib)} / ${f0(r.ort?.peak_rss_mib)} / ${f0(r.llama?.peak_rss_mib)} |` +
    (with16 ? ` ${f2(r.nbits16?.decode_ms)} | ${ratio(r.nbits16?.decode_ms, r.ort?.decode_ms)} | ` +
      `${ratio(r.nbits16?.decode_ms, r.llama?.decode_ms)} | ` +
      `${r.floor16_ms && r.nbits16 ? f0(100 * r.floor16_ms / r.nbits16.decode_ms) : '-'} |` : '') +
    (withGenai ? ` ${f2(r.genai?.decode_ms)} | ${ratio(r.nbits?.decode_ms, r.genai?.decode_ms)} | ` +
      `${f0(r.genai?.prefill_tok_s)} | ${f0(r.genai?.peak_rss_mib)} |` : '') +
    (withIk ? ` ${f2(r.ik?.decode_ms)} | ${ratio(r.nbits?.decode_ms, r.ik?.decode_ms)} | ` +
      `${f0(r.ik?.prefill_tok_s)} | ${ratio(r.ik?.prefill_tok_s, r.nbits?.prefill_tok_s)} | ${f0(r.ik?.peak_rss_mib)} |` : ''));
const summaryFile = path.join(resDir, 'summary.json');
fs.writeFileSync(summaryFile, JSON.stringify({ date: new Date().toISOString(), prompt: P, decode: N, reps, rows },
  null, 1));
console.log(`\nJSON: ${summaryFile}`);
