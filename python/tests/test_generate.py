"""Generation through the Python API against the C++ CLI and ONNX Runtime's references."""

import json
import subprocess
import threading

import numpy as np
import pytest

import nbits
from conftest import THREADS, in_ci, nbits_cli, require, stories


def ort_seq(key):
    with open(require(stories("reference/onnx_greedy_ort.json"))) as f:
        return json.load(f)[key]


def greedy_ids(model, prompt_ids, n):
    params = nbits.GeneratorParams(model)
    params.set_search_options(max_length=len(prompt_ids) + n, do_sample=False)
    g = nbits.Generator(model, params)
    g.append_tokens(prompt_ids)
    out = []
    while not g.is_done():
        g.generate_next_token()
        out.append(int(g.get_next_tokens()[0]))
    return out, g


# Tokens compared per variant, as tests/cli/run_test.cc (int8-activation variants drift from
# ORT at the ulp level after some tokens).
CASES = [("int4", 32), ("fp32", 128), ("int4_acc0", 128), ("int8_acc0", 64)]


@pytest.mark.parametrize("variant,n", CASES)
def test_greedy_ids_match_onnx_runtime(variant, n):
    model = nbits.Model(require(stories(f"onnx_{variant}")), threads=THREADS)
    ids, g = greedy_ids(model, [1], n)
    assert ids == ort_seq(f"{variant}|")["seq"][1 : 1 + n]
    seq = g.get_sequence(0)
    assert seq.dtype == np.int32 and list(seq) == [1] + ids
    assert g.token_count() == 1 + n


@pytest.mark.parametrize("variant,n", [("int4", 32), ("fp32", 64), ("int8", 32)])
def test_greedy_ids_equal_the_cli(variant, n):
    cli = nbits_cli()
    if cli is None:
        msg = "no nbits CLI (build/nbits; NBITS_CLI overrides)"
        if in_ci():
            pytest.fail(msg)
        pytest.skip(msg)
    folder = require(stories(f"onnx_{variant}"))
    r = subprocess.run([cli, "run", "-m", folder, "--ids", "1", "-n", str(n), "--format", "json", "-t", "1"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    cli_ids = json.loads(r.stdout)["ids"]
    ids, _ = greedy_ids(nbits.Model(folder, threads=THREADS), [1], n)
    assert ids == cli_ids
    # The text iterator agrees with the CLI's text too.
    text = "".join(nbits.Model(folder, threads=THREADS).generate([1], max_new_tokens=n, do_sample=False))
    assert text == json.loads(r.stdout)["text"]


def test_prompt_text_and_first_logits():
    model = nbits.Model(require(stories("onnx_fp32")), threads=THREADS)
    tok = nbits.Tokenizer(model)
    ids = tok.encode("Once upon a time")
    assert isinstance(ids, np.ndarray) and ids.dtype == np.int32
    ref = ort_seq("fp32|Once upon a time")
    assert list(ids) == ref["seq"][:5]  # BOS + 4 tokens
    out, _ = greedy_ids(model, ids, 32)
    assert out == ref["seq"][5:37]

    g = nbits.Generator(model, nbits.GeneratorParams(model))
    g.append_tokens([1])
    logits = g.get_logits()
    assert logits.shape == (1, 1, model.vocab_size) and logits.dtype == np.float32
    assert not logits.flags.writeable
    np.testing.assert_allclose(logits[0, 0, :8], ort_seq("fp32|")["firstLogits"][0], atol=1e-3)
    kept = logits.copy()
    g.generate_next_token()  # runs nothing new: samples the prefill's logits
    g.generate_next_token()  # runs one token
    np.testing.assert_array_equal(logits, kept)  # the view changes only with get_logits()
    later = g.get_logits()
    np.testing.assert_allclose(later[0, 0, :8], ort_seq("fp32|")["firstLogits"][1], atol=1e-3)
    np.testing.assert_array_equal(logits, later)  # one buffer per Generator
    del g, later  # the view keeps its buffer alive
    assert np.isfinite(logits).all()


def test_text_iterator_matches_llama2c():
    model = nbits.Model(require(stories("onnx_fp32")), threads=THREADS)
    with open(require(stories("reference/greedy_256.txt"))) as f:
        ref = f.read()
    pieces = list(model.generate("", max_new_tokens=200, do_sample=False))
    assert len(pieces) > 50
    text = "".join(pieces)
    assert len(text) > 400
    assert ref.startswith(text)


def test_stream_decoder_equals_decode(stories_int4):
    tok = nbits.Tokenizer(stories_int4)
    ids = ort_seq("int4|")["seq"]
    stream = tok.create_stream()
    text = "".join(stream.decode(t) for t in ids) + stream.flush()
    assert text == tok.decode(ids)
    assert text == tok.decode(np.asarray(ids, dtype=np.int64))
    assert tok.decode(tok.encode("One day, Lily met a cat.")) == "One day, Lily met a cat."


def test_two_generators_interleaved_equal_each_alone(stories_int4):
    tok = nbits.Tokenizer(stories_int4)
    prompts = [tok.encode("Once upon a time"), tok.encode("The little dog")]
    alone = [greedy_ids(stories_int4, p, 40)[0] for p in prompts]
    assert alone[0] != alone[1]

    gens = []
    for p in prompts:
        params = nbits.GeneratorParams(stories_int4)
        params.set_search_options(max_length=len(p) + 40, do_sample=False)
        gens.append(nbits.Generator(stories_int4, params))
    gens[0].append_tokens(prompts[0])
    gens[1].append_tokens(prompts[1])
    got = [[], []]
    while not (gens[0].is_done() and gens[1].is_done()):
        for i, g in enumerate(gens):
            if not g.is_done():
                g.generate_next_token()
                got[i].append(int(g.get_next_tokens()[0]))
    assert got == alone

    # Two Python threads at once (the GIL is released while each step runs).
    results = [None, None]

    def run(i):
        results[i] = greedy_ids(stories_int4, prompts[i], 40)[0]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == alone


def test_sampling_is_reproducible_with_a_seed(stories_int4):
    def sample(seed):
        p = nbits.GeneratorParams(stories_int4)
        p.set_search_options(do_sample=True, temperature=1.0, top_k=40, top_p=0.95, random_seed=seed, max_length=40)
        g = nbits.Generator(stories_int4, p)
        g.append_tokens([1])
        while not g.is_done():
            g.generate_next_token()
        return list(g.get_sequence(0))

    assert sample(7) == sample(7)
    assert sample(7) != sample(8) or sample(7) != sample(9)
    greedy = greedy_ids(stories_int4, [1], 39)[0]
    assert sample(7)[1:] != greedy


def test_rewind_to_regenerates_the_same_tokens(stories_int4):
    ids, g = greedy_ids(stories_int4, [1, 403, 407], 20)
    g.rewind_to(7)
    assert list(g.get_sequence(0)) == [1, 403, 407] + ids[:4]
    g.append_tokens([ids[4]])
    assert g.token_count() == 8
    again = []
    while not g.is_done():
        g.generate_next_token()
        again.append(int(g.get_next_tokens()[0]))
    assert again == ids[5:]


def test_gil_released_while_generating(stories_int4):
    params = nbits.GeneratorParams(stories_int4)
    params.set_search_options(max_length=300)
    g = nbits.Generator(stories_int4, params)
    done = threading.Event()
    out = {}

    def run():
        out["r"] = g.generate("Once upon a time")
        done.set()

    counter = 0
    t = threading.Thread(target=run)
    t.start()
    while not done.is_set():
        counter += 1
    t.join()
    assert out["r"]["ids"].size > 0 and out["r"]["text"]
    assert counter > 1000  # this thread ran while the other one generated

    # Text-level generate continues the conversation on the same cache.
    n = g.token_count()
    r2 = g.generate(" The end.")
    assert r2["prompt_ids"][0] != 1  # no second BOS
    assert g.token_count() > n


def test_on_text_callback_and_its_exception(stories_int4):
    g = nbits.Generator(stories_int4)
    pieces = []
    r = g.generate("Once upon a time", pieces.append)
    assert "".join(pieces) == r["text"]

    def boom(piece):
        raise ValueError("stop here")

    with pytest.raises(ValueError, match="stop here"):
        nbits.Generator(stories_int4).generate("Once", boom)
