"""The generated schema suite (schemas.py) through three runtimes side by side, greedy, each prompt the
same token ids everywhere:
  - onnxruntime-genai (PyPI) GeneratorParams.set_guidance("json_schema", ...) on a genai export,
  - nbits' Python package, the same calls on the same export and on the GGUF it was made from,
  - llama.cpp (node-llama-cpp) with its JSON-schema grammar on the GGUF (llama_schema_suite.mjs).
For each runtime and thread count: replies that end within --max-tokens, how many of those parse and
validate (jsonschema, draft 2020-12 formats), and the median decode ms/token (first to last generated
token, prefill excluded) constrained and free (the first --free-cases prompts without a schema).

    bash bench/guidance/make_genai_export.sh       # the export of the PyPI Qwen2.5-Coder-0.5B Q4_K_M
    python bench/guidance/schema_side_by_side.py --genai EXPORT_DIR --gguf MODEL.gguf [-n 100] [-t 1 2]
needs the venv of tools/setup_models.sh (onnxruntime-genai, jsonschema, rfc3339-validator), the nbits
package (pip install ./python) and, for llama.cpp, bench/peers/install.sh."""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import jsonschema

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, HERE)
from schemas import format_checker, make_schemas  # noqa: E402


def load(rt, path, threads):
    cfg = rt.Config(path)
    cfg.overlay(json.dumps({"model": {"decoder": {"session_options": {"intra_op_num_threads": threads}}}}))
    return rt.Model(cfg)


def python_runs(rt, model, cases, max_tokens, constrained):
    """One record per case: tokens, decode ms/token, finished, text."""
    tok = rt.Tokenizer(model)
    out = []
    for c in cases:
        params = rt.GeneratorParams(model)
        params.set_search_options(do_sample=False, max_length=len(c["ids"]) + max_tokens + 8)
        if constrained:
            params.set_guidance("json_schema", json.dumps(c["schema"]))
        g = rt.Generator(model, params)
        g.append_tokens([c["ids"]])
        ids, stamps = [], []
        while not g.is_done() and len(ids) < max_tokens:
            g.generate_next_token()
            stamps.append(time.perf_counter())
            ids.append(int(g.get_next_tokens()[0]))
        eos = set(tok.eos_token_ids) if hasattr(tok, "eos_token_ids") else set()
        finished = g.is_done() or (ids and ids[-1] in eos)
        n = len(stamps)
        out.append({"name": c["name"], "tokens": n, "finished": bool(finished), "text": tok.decode(ids),
                    "ms_per_token": (stamps[-1] - stamps[0]) * 1e3 / (n - 1) if n > 1 else None})
    return out


def llama_runs(gguf, cases, threads, max_tokens, constrained):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(cases, f)
    try:
        cmd = ["node", os.path.join(HERE, "llama_schema_suite.mjs"), gguf, f.name, "--threads", str(threads),
               "--max", str(max_tokens)] + ([] if constrained else ["--free"])
        p = subprocess.run(cmd, capture_output=True, text=True, check=True)
        return [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    finally:
        os.unlink(f.name)


def judge(records, schemas, fc):
    finished = valid = 0
    failures = []
    for r in records:
        if r.get("error") or not r["finished"]:
            continue
        finished += 1
        try:
            jsonschema.validate(json.loads(r["text"]), schemas[r["name"]], format_checker=fc)
            valid += 1
        except Exception as e:  # noqa: BLE001 - reported
            failures.append(f"{r['name']}: {type(e).__name__}: {str(e)[:160]} reply {r['text'][:200]!r}")
    return finished, valid, failures


def median_ms(records):
    v = [r["ms_per_token"] for r in records if r.get("ms_per_token")]
    return statistics.median(v) if v else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--genai", required=True, help="onnxruntime-genai export folder")
    ap.add_argument("--gguf", help="the GGUF the export was made from (nbits and llama.cpp on it)")
    ap.add_argument("-n", type=int, default=100)
    ap.add_argument("-t", "--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--max-tokens", type=int, default=200)
    ap.add_argument("--free-cases", type=int, default=20)
    ap.add_argument("--runtimes", default="onnxruntime-genai,nbits,nbits-gguf,llama.cpp")
    ap.add_argument("--json", help="write every record here")
    a = ap.parse_args()

    import nbits
    want = a.runtimes.split(",")
    # The prompts: the export's chat template (the GGUF's) rendered once, encoded by nbits; every
    # runtime gets these ids (the tokenizers are the same file; onnxruntime-genai's encode is checked).
    ref_model = load(nbits, a.genai, 1)
    ref_tok = nbits.Tokenizer(ref_model)
    schemas, cases = {}, []
    for name, prompt, schema in make_schemas(a.n, seed=1):
        text = ref_tok.apply_chat_template(json.dumps([{"role": "user", "content": prompt}]), add_generation_prompt=True)
        cases.append({"name": name, "ids": [int(i) for i in ref_tok.encode(text)], "schema": schema, "text": text})
        schemas[name] = schema
    del ref_tok, ref_model
    fc = format_checker()
    rows, dump = [], {}
    for t in a.threads:
        for rt_name in want:
            if rt_name in ("nbits-gguf", "llama.cpp") and not a.gguf:
                continue
            print(f"-- {rt_name}, {t} thread(s)", file=sys.stderr, flush=True)
            if rt_name == "llama.cpp":
                con = llama_runs(a.gguf, cases, t, a.max_tokens, True)
                free = llama_runs(a.gguf, cases[: a.free_cases], t, a.max_tokens, False)
            else:
                if rt_name == "onnxruntime-genai":
                    import onnxruntime_genai as rt
                else:
                    rt = nbits
                model = load(rt, a.gguf if rt_name == "nbits-gguf" else a.genai, t)
                if rt_name == "onnxruntime-genai":
                    tok = rt.Tokenizer(model)
                    bad = [c["name"] for c in cases if [int(i) for i in tok.encode(c["text"])] != c["ids"]]
                    if bad:
                        print(f"   onnxruntime-genai encodes {len(bad)} prompts differently (first {bad[0]})", file=sys.stderr)
                con = python_runs(rt, model, cases, a.max_tokens, True)
                free = python_runs(rt, model, cases[: a.free_cases], a.max_tokens, False)
                del model
            finished, valid, failures = judge(con, schemas, fc)
            for f in failures[:5]:
                print("   invalid: " + f, file=sys.stderr)
            fm, cm = median_ms(free), median_ms(con)
            rows.append((rt_name, t, finished, valid, sum(r.get("tokens", 0) for r in con), fm, cm))
            dump[f"{rt_name}/{t}"] = {"constrained": con, "free": free}
            print(f"   {finished} finished, {valid} valid; free {fm:.2f} ms/token, constrained {cm:.2f}", file=sys.stderr)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dump, f)
    print(f"| runtime | threads | finished within {a.max_tokens} tokens | valid | tokens | free ms/token | "
          "schema ms/token | schema / free |")
    print("|---|---|---|---|---|---|---|---|")
    for rt_name, t, finished, valid, ntok, fm, cm in rows:
        print(f"| {rt_name} | {t} | {finished} / {a.n} | {valid} / {finished} | {ntok} | {fm:.2f} | {cm:.2f} | {cm / fm:.3f} |")


if __name__ == "__main__":
    main()
