// Prints ONNX Runtime's logits for a prompt and a few single-token steps, as JSON:
//   node bench/peers/ort_logits.mjs MODEL_DIR --ids 1,2,3 [--steps 4,5] [--threads 1]
// {"ort_version": ..., "logits": [[last position after the prompt], [after step 1], ...]}
import { loadOrt, readGenaiConfig, createSession, Decoder, parseArgs } from './ort_common.mjs';

const args = parseArgs(process.argv.slice(2), { ids: '1', steps: '', threads: '1' });
const dir = args._[0];
if (!dir) { console.error('usage: ort_logits.mjs MODEL_DIR --ids 1,2,3 [--steps 4,5]'); process.exit(2); }
const ort = loadOrt();
const cfg = readGenaiConfig(dir);
const dec = new Decoder(ort, await createSession(ort, dir, Number(args.threads)), cfg);
const ids = args.ids.split(',').map(Number);
const steps = args.steps ? args.steps.split(',').map(Number) : [];
const rows = [];
const lastRow = (t) => { const V = t.dims[2]; return Array.from(t.data.subarray((t.dims[1] - 1) * V, t.dims[1] * V)); };
rows.push(lastRow(await dec.step(ids)));
for (const id of steps) rows.push(lastRow(await dec.step([id])));
process.stdout.write(JSON.stringify({ ort_version: ort.env.versions?.common ?? '1.30.0', logits: rows }) + '\n');
