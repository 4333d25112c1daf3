#!/usr/bin/env python3
"""Speculative decoding against plain decoding on real GGUF files, side by side.

For each prompt and thread count: `nbits run --chat --format json` plain, with --spec lookup and
(when a draft model is given) with --draft-model, in alternating rounds; prints the median decode
ms/token of each, the ratio to plain, the acceptance, and checks that the ids are plain decoding's.

  python3 bench/speculative/run.py --model Q05.gguf [--draft-model Q05.gguf] [--threads 1,2]
      [--reps 2] [-n 128] [--nbits build/nbits] [--peer]
--peer: llama.cpp (node-llama-cpp, bench/peers/install.sh) on the same prompt ids, plain and with its
InputLookupTokenPredictor / DraftSequenceTokenPredictor, in the same rounds.
Defaults: the Qwen2.5-Coder-0.5B-Instruct Q4_K_M of the cache (bench/peers/fetch_real_gguf.sh).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CACHE = os.environ.get("NBITS_CACHE", os.path.expanduser("~/.cache/nbits"))
QWEN05 = os.path.join(CACHE, "qwen25-coder", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")

PROMPT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "prompts")
# edit: a 60-line module to return with type hints (the answer repeats the prompt: prompt lookup's
# case); extract: fields of a given text as JSON, quoting it; chat: open chat (little to look up).
PROMPTS = {name: open(os.path.join(PROMPT_DIR, name + ".txt")).read() for name in ("edit", "extract", "chat")}


def run(nbits, model, prompt, n, threads, extra):
    cmd = [nbits, "run", "-m", model, "--chat", "-p", prompt, "-n", str(n), "-t", str(threads), "--temp", "0",
           "--format", "json"] + extra
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd[:6])} ...\n{r.stderr}")
    return json.loads(r.stdout)


def run_peer(model, ids_file, n, threads, predictor, draft):
    here = os.path.dirname(os.path.abspath(__file__))
    cmd = ["node", os.path.join(here, "llama_spec.mjs"), model, ids_file, "--decode", str(n), "--threads",
           str(threads), "--predictor", predictor]
    if draft:
        cmd += ["--draft-model", draft]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"llama.cpp run failed ({predictor}):\n{r.stderr}")
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=QWEN05)
    ap.add_argument("--draft-model", default="")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("--prompts", default=",".join(PROMPTS))
    ap.add_argument("--peer", action="store_true")
    ap.add_argument("--nbits", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "nbits"))
    a = ap.parse_args()
    if not os.path.exists(a.model):
        sys.exit(f"no model at {a.model} (bash bench/peers/fetch_real_gguf.sh fetches the Qwen2.5-Coder files)")
    modes = [("plain", []), ("lookup", ["--spec", "lookup"])]
    if a.draft_model:
        modes.append(("draft-model", ["--spec", "draft", "--draft-model", a.draft_model]))
    print(f"model {os.path.basename(a.model)}; draft {os.path.basename(a.draft_model) or '-'}; -n {a.n}; "
          f"{a.reps} alternating rounds; greedy")
    print("| prompt | threads | " + " | ".join(f"{m} ms/tok" for m, _ in modes) + " | " +
          " | ".join(f"{m} speed-up, acceptance" for m, _ in modes[1:]) + " |")
    print("|---" * (2 + len(modes) + len(modes) - 1) + "|")
    peer_modes = []
    if a.peer:
        peer_modes = [("llama.cpp plain", "none"), ("llama.cpp lookup", "lookup")]
        if a.draft_model:
            peer_modes.append(("llama.cpp draft", "draft"))
    for name in a.prompts.split(","):
        for t in [int(x) for x in a.threads.split(",")]:
            ms = {m: [] for m, _ in modes}
            acc = {m: "" for m, _ in modes}
            want = None
            for _ in range(a.reps):
                for m, extra in modes:
                    j = run(a.nbits, a.model, PROMPTS[name], a.n, t, extra)
                    if want is None:
                        want = j["ids"]
                    elif j["ids"] != want:
                        sys.exit(f"{name} t={t} {m}: ids differ from plain decoding's")
                    ms[m].append(j["decode_ms_per_token"])
                    s = j.get("speculative")
                    if s:
                        acc[m] = f"{s['accepted']}/{s['drafted']} in {s['verify_steps']} of {s['steps']} steps"
            med = {m: statistics.median(v) for m, v in ms.items()}
            cells = [f"{med[m]:.1f}" for m, _ in modes]
            cells += [f"{med['plain'] / med[m]:.2f}x, {acc[m]}" for m, _ in modes[1:]]
            print(f"| {name} | {t} | " + " | ".join(cells) + " |", flush=True)
            if not peer_modes:
                continue
            # The same prompt ids (nbits' chat rendering) through llama.cpp, alternating rounds.
            prompt_ids = run(a.nbits, a.model, PROMPTS[name], 1, t, [])["prompt_ids"]
            with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
                json.dump(prompt_ids, f)
                ids_file = f.name
            pms = {m: [] for m, _ in peer_modes}
            pst = {m: "" for m, _ in peer_modes}
            same = {m: 0 for m, _ in peer_modes}
            for _ in range(a.reps):
                for m, pred in peer_modes:
                    j = run_peer(a.model, ids_file, a.n, t, pred, a.draft_model if pred == "draft" else "")
                    pms[m].append(j["decode_ms_per_token"])
                    p = j.get("predictions") or {}
                    pst[m] = f"validated {p.get('validated', 0)}, refuted {p.get('refuted', 0)}" if pred != "none" else ""
                    same[m] = next((i for i, (x, y) in enumerate(zip(j["ids"], want)) if x != y), min(len(want), len(j["ids"])))
            os.unlink(ids_file)
            pmed = {m: statistics.median(v) for m, v in pms.items()}
            for m, pred in peer_modes:
                print(f"| {name} | {t} | {m}: {pmed[m]:.1f} ms/tok"
                      + (f", {pmed['llama.cpp plain'] / pmed[m]:.2f}x its plain, {pst[m]}" if pred != "none" else "")
                      + f"; nbits best / this: {pmed[m] / min(med.values()):.2f}x; first {same[m]} ids equal nbits' |",
                      flush=True)


if __name__ == "__main__":
    main()
