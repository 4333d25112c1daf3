"""One greedy-generation script, run with onnxruntime-genai and with nbits on the same folder.

    python compare_og.py -m ~/.cache/nbits/builder-models/smollm2_int4 -t 1 -n 64

`run()` below is written against onnxruntime-genai's API only; it is called once with
`import onnxruntime_genai as og` and once with `import nbits as og`. The script prints the
prompt and generated tokens of each, whether they are equal, and prefill / decode tokens/s
side by side (best of --repeat runs). Exit status 1 when the greedy tokens differ.
"""

import argparse
import importlib
import json
import sys
import time


def run(og, model_path, prompt, n_new, threads, repeat):
    """Loads the model with `og`, generates `n_new` greedy tokens after `prompt`, times it."""
    config = og.Config(model_path)
    config.clear_providers()
    if threads:
        config.overlay(json.dumps({"model": {"decoder": {"session_options": {"intra_op_num_threads": threads}}}}))
    model = og.Model(config)
    tokenizer = og.Tokenizer(model)
    input_tokens = tokenizer.encode(prompt)

    best = None
    for _ in range(repeat):
        params = og.GeneratorParams(model)
        params.set_search_options(do_sample=False, max_length=len(input_tokens) + n_new)
        generator = og.Generator(model, params)
        t0 = time.perf_counter()
        generator.append_tokens(input_tokens)
        t1 = time.perf_counter()
        tokens = []
        t_first = None
        while not generator.is_done():
            generator.generate_next_token()
            tokens.append(int(generator.get_next_tokens()[0]))
            if t_first is None:
                t_first = time.perf_counter()
        t2 = time.perf_counter()
        # The first generate_next_token() samples from the prefill's logits (og runs
        # nothing new); the decode rate counts the steps after it.
        decode_steps = max(len(tokens) - 1, 1)
        r = {
            "prompt_ids": [int(t) for t in input_tokens],
            "ids": tokens,
            "text": tokenizer.decode(tokens),
            "prefill_tok_s": len(input_tokens) / max(t1 - t0, 1e-9),
            "decode_tok_s": decode_steps / max(t2 - (t_first or t1), 1e-9),
        }
        if best is None or r["decode_tok_s"] > best["decode_tok_s"]:
            best = r
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("-m", "--model_path", required=True, help="onnxruntime-genai folder (genai_config.json)")
    ap.add_argument("-p", "--prompt", default="Once upon a time, in a small village,")
    ap.add_argument("-n", "--new_tokens", type=int, default=64)
    ap.add_argument("-t", "--threads", type=int, default=1, help="intra-op threads for both (0 = each one's default)")
    ap.add_argument("-r", "--repeat", type=int, default=3, help="runs per backend; the fastest decode is shown")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = ap.parse_args()

    results = {}
    for name in ("onnxruntime_genai", "nbits"):
        og = importlib.import_module(name)
        results[name] = run(og, args.model_path, args.prompt, args.new_tokens, args.threads, args.repeat)
    a, b = results["onnxruntime_genai"], results["nbits"]
    same_prompt = a["prompt_ids"] == b["prompt_ids"]
    same = a["ids"] == b["ids"]
    first_diff = next((i for i, (x, y) in enumerate(zip(a["ids"], b["ids"])) if x != y), None)
    if args.json:
        print(json.dumps({"model": args.model_path, "threads": args.threads, "same_prompt_ids": same_prompt,
                          "same_tokens": same, "first_difference": first_diff, "results": results}))
    else:
        print(f"model   {args.model_path}")
        print(f"threads {args.threads}   prompt {len(a['prompt_ids'])} tokens   new tokens {args.new_tokens}")
        print(f"{'':22}{'onnxruntime-genai':>20}{'nbits':>12}")
        print(f"{'prefill tok/s':22}{a['prefill_tok_s']:>20.1f}{b['prefill_tok_s']:>12.1f}")
        print(f"{'decode tok/s':22}{a['decode_tok_s']:>20.1f}{b['decode_tok_s']:>12.1f}")
        print(f"{'generated tokens':22}{len(a['ids']):>20}{len(b['ids']):>12}")
        print(f"prompt ids equal: {same_prompt}   greedy tokens equal: {same}"
              + ("" if same else f" (first difference at {first_diff})"))
        print(f"nbits: {b['text']!r}")
        if not same:
            print(f"og:    {a['text']!r}")
    return 0 if same and same_prompt else 1


if __name__ == "__main__":
    sys.exit(main())
