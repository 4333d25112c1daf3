#!/usr/bin/env python3
"""Load test for `nbits serve`: N concurrent streaming clients, each sending R requests in turn.

Standard library only. Reports time to first token (TTFT: request sent -> first content delta),
inter-token latency (ITL: gaps between content deltas of one reply), end-to-end seconds per request,
and aggregate completion tokens per second (all clients, first request sent -> last reply done).
Token counts come from the server (stream_options.include_usage), not from counting deltas.

  python3 bench/serve_load.py --url http://127.0.0.1:8080 --clients 2 --requests 4 \
      --prompt-tokens 128 --max-tokens 64 [--api-key KEY] [--json out.json]

--serve 'nbits serve -m DIR --port 0 ...': starts that server, reads its URL, stops it (SIGTERM) at
the end. Prompts are token ids (completions endpoint; ids (1 + 7919*i + 104729*k) mod vocab,
different per request so that no prompt reuse helps), greedy; a reply may end early at an eos, which
the token counts reflect.
"""
import argparse
import http.client
import json
import shlex
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse


def pct(values, q):
    if not values:
        return float("nan")
    s = sorted(values)
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def one_request(host, port, headers, body):
    """Streams one completion; returns (ttft_s, [itl_s...], total_s, completion_tokens, prompt_tokens)."""
    c = http.client.HTTPConnection(host, port, timeout=600)
    t0 = time.monotonic()
    c.request("POST", "/v1/completions", json.dumps(body), headers)
    r = c.getresponse()
    if r.status != 200:
        raise RuntimeError(f"HTTP {r.status}: {r.read()[:300]!r}")
    first, last, gaps, usage = None, None, [], {}
    while True:
        line = r.readline()
        if not line:
            break
        if not line.startswith(b"data: ") or line.startswith(b"data: [DONE]"):
            continue
        j = json.loads(line[6:])
        if "error" in j:
            raise RuntimeError(f"error event: {j['error']}")
        if j.get("usage"):
            usage = j["usage"]
        ch = j.get("choices") or []
        if ch and ch[0].get("finish_reason") is None and ch[0].get("text"):
            now = time.monotonic()
            if first is None:
                first = now
            else:
                gaps.append(now - last)
            last = now
    total = time.monotonic() - t0
    c.close()
    return ((first - t0) if first else float("nan"), gaps, total, usage.get("completion_tokens", 0),
            usage.get("prompt_tokens", 0))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("--serve", help="command line of a server to start (its printed URL is used)")
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--requests", type=int, default=4, help="requests per client, one after another")
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--vocab", type=int, default=512, help="prompt ids are below this (at most the model's vocabulary)")
    ap.add_argument("--api-key", default="")
    ap.add_argument("--json", help="write the figures here too")
    a = ap.parse_args()

    proc = None
    url = a.url
    if a.serve:
        proc = subprocess.Popen(shlex.split(a.serve), stdout=subprocess.PIPE, text=True)
        for line in proc.stdout:
            sys.stderr.write("server: " + line)
            if "http://" in line and url == a.url:
                url = line[line.index("http://"):].split()[0]
            if "ready:" in line:
                break
        threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
    u = urllib.parse.urlparse(url)
    host, port = u.hostname, u.port or 80
    headers = {"Content-Type": "application/json"}
    if a.api_key:
        headers["Authorization"] = "Bearer " + a.api_key
    vocab = a.vocab

    results, errors, lock = [], [], threading.Lock()

    def client(ci):
        for k in range(a.requests):
            seed = ci * 1000 + k
            ids = [(1 + 7919 * i + 104729 * (seed + 1)) % (vocab - 3) + 3 for i in range(a.prompt_tokens)]
            body = {"prompt": ids, "max_tokens": a.max_tokens, "temperature": 0, "stream": True,
                    "stream_options": {"include_usage": True}}
            try:
                r = one_request(host, port, headers, body)
                with lock:
                    results.append(r)
            except Exception as e:  # noqa: BLE001 - reported, counted
                with lock:
                    errors.append(str(e))

    t0 = time.monotonic()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(a.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    if proc:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)

    ttft = [r[0] for r in results]
    itl = [g for r in results for g in r[1]]
    e2e = [r[2] for r in results]
    tokens = sum(r[3] for r in results)
    out = {
        "clients": a.clients, "requests": len(results), "errors": len(errors),
        "prompt_tokens": a.prompt_tokens, "max_tokens": a.max_tokens,
        "ttft_ms_median": 1e3 * statistics.median(ttft) if ttft else None,
        "ttft_ms_p95": 1e3 * pct(ttft, 0.95),
        "itl_ms_median": 1e3 * statistics.median(itl) if itl else None,
        "itl_ms_p95": 1e3 * pct(itl, 0.95),
        "e2e_s_median": statistics.median(e2e) if e2e else None,
        "completion_tokens": tokens, "wall_s": wall, "aggregate_tok_s": tokens / wall if wall > 0 else 0,
    }
    print(f"{a.clients} clients x {a.requests} requests (prompt {a.prompt_tokens}, max_tokens {a.max_tokens}): "
          f"{len(results)} done, {len(errors)} errors")
    print(f"  TTFT   median {out['ttft_ms_median']:.1f} ms, p95 {out['ttft_ms_p95']:.1f} ms")
    print(f"  ITL    median {out['itl_ms_median']:.1f} ms, p95 {out['itl_ms_p95']:.1f} ms")
    print(f"  e2e    median {out['e2e_s_median']:.2f} s per request")
    print(f"  tokens {tokens} in {wall:.2f} s: {out['aggregate_tok_s']:.1f} tok/s aggregate")
    for e in errors[:5]:
        print("  error:", e)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
