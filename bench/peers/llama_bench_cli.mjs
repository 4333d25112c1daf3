// A llama-bench binary (ik_llama.cpp's, or mainline llama.cpp's) on a GGUF, reported in the same
// JSON summary as the other peers: prefill = its ppP test, decode = its tgN test after a P-token
// prompt (ik_llama.cpp: -gp P,N; mainline: -d P -n N), mmap off, T threads, its own warm-up.
//   node bench/peers/llama_bench_cli.mjs LLAMA_BENCH MODEL.gguf [--threads 1] [--prompt 128]
//        [--decode 64] [--reps 1] [--args '-rtr 1']
// llama-bench times N generated tokens as one sample, so decode_ms_all holds one mean per rep, not
// one value per token. --args defaults to '-rtr 1' (run-time repacking into row-interleaved
// quants) when the binary has that option. The binary is built by hand outside this repository.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { parseArgs } from './ort_common.mjs';
import { summary } from './stats.mjs';

const a = parseArgs(process.argv.slice(2), { threads: '1', prompt: '128', decode: '64', reps: '1' });
const [bin, file] = a._;
if (!bin || !file) {
  console.error('usage: llama_bench_cli.mjs LLAMA_BENCH MODEL.gguf [--threads T] [--prompt P] [--decode N] ' +
    "[--reps R] [--args '...']");
  process.exit(2);
}
for (const p of [bin, file]) if (!fs.existsSync(p)) { console.error(`llama_bench_cli.mjs: ${p} does not exist`); process.exit(2); }
const T = Number(a.threads), P = Number(a.prompt), N = Number(a.decode), R = Number(a.reps);
let help = '';
try {
  help = execFileSync(bin, ['--help'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
} catch (e) {
  help = `${e.stdout || ''}${e.stderr || ''}`;  // some builds exit non-zero after printing the usage
}
const ik = /\s-gp\s/.test(help);
if (!ik && !/\s-d,/.test(help)) {
  console.error(`llama_bench_cli.mjs: ${bin} has neither -gp (ik_llama.cpp) nor -d (llama.cpp): not a llama-bench?`);
  process.exit(2);
}
const extra = (a.args ?? (/-rtr/.test(help) ? '-rtr 1' : '')).split(/\s+/).filter(Boolean);
const common = ['-m', file, '-t', String(T), '-r', String(R), '-mmp', '0', '-o', 'json', ...extra];
const runBench = (args) => JSON.parse(execFileSync(bin, [...common, ...args], { encoding: 'utf8',
  maxBuffer: 1 << 26, stdio: ['ignore', 'pipe', 'ignore'] }));
const tests = [...runBench(['-p', String(P), '-n', '0']),
  ...runBench(ik ? ['-p', '0', '-n', '0', '-gp', `${P},${N}`] : ['-p', '0', '-d', String(P), '-n', String(N)])];
const pp = tests.find((t) => t.n_prompt === P && t.n_gen === 0);
const tg = tests.find((t) => t.n_gen === N);
if (!pp || !tg) { console.error(`llama_bench_cli.mjs: no pp${P} / tg${N} result in ${JSON.stringify(tests)}`); process.exit(3); }
const pre = pp.samples_ns.map((ns) => ns / 1e6), dec = tg.samples_ns.map((ns) => ns / 1e6 / N);
console.log(JSON.stringify(summary({ runtime: ik ? 'ik_llama.cpp' : 'llama.cpp (llama-bench)',
  version: `${pp.build_commit || '?'} (build ${pp.build_number ?? '?'})`, model: file, threads: T,
  args: extra.join(' '), decode_note: 'mean per token of each rep' }, P, pre, dec)));
