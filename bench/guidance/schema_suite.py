"""The generated schema suite (schemas.py) through `nbits serve` with the official OpenAI Python
client: response_format json_schema, strict, greedy. Prints, per schema, whether the reply finished
and validates (jsonschema, draft 2020-12 formats), and the totals.

    python bench/guidance/schema_suite.py -m MODEL.gguf [-n 100] [-t 2] [--max-tokens 400]
(needs: pip install openai jsonschema rfc3339-validator; NBITS=path/to/nbits, default build/nbits)."""

import argparse
import json
import os
import subprocess
import sys
import time

import jsonschema
from openai import OpenAI

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from schemas import format_checker, make_schemas  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("-n", type=int, default=100)
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=400)
    ap.add_argument("--port", type=int, default=8765)
    a = ap.parse_args()
    nbits = os.environ.get("NBITS", os.path.join(os.path.dirname(__file__), "..", "..", "build", "nbits"))
    srv = subprocess.Popen([nbits, "serve", "-m", a.model, "-t", str(a.threads), "--port", str(a.port), "--ctx", "4096"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for line in srv.stdout:
            if "ready:" in line:
                break
        client = OpenAI(base_url=f"http://127.0.0.1:{a.port}/v1", api_key="x")
        fc = format_checker()
        finished = valid = tokens = 0
        t0 = time.time()
        for name, prompt, schema in make_schemas(a.n, seed=1):
            r = client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": prompt}], temperature=0, max_tokens=a.max_tokens,
                response_format={"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}})
            c = r.choices[0]
            tokens += r.usage.completion_tokens
            ok = "-"
            if c.finish_reason == "stop":
                finished += 1
                try:
                    jsonschema.validate(json.loads(c.message.content), schema, format_checker=fc)
                    valid += 1
                    ok = "valid"
                except Exception as e:  # noqa: BLE001
                    ok = f"INVALID {type(e).__name__}: {str(e)[:120]}"
            print(f"{name} {c.finish_reason:6} {r.usage.completion_tokens:4} {ok}", flush=True)
        dt = time.time() - t0
        print(json.dumps({"model": os.path.basename(a.model), "schemas": a.n, "finished": finished, "valid": valid,
                          "completion_tokens": tokens, "seconds": round(dt, 1), "threads": a.threads}))
    finally:
        srv.terminate()
        srv.wait()


if __name__ == "__main__":
    main()
