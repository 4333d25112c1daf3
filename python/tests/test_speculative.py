"""Speculative decoding through the Python API (onnxruntime-genai's set_speculative_options /
get_speculative_stats names): the token loop gives plain decoding's tokens."""

import os

import pytest

import nbits
from conftest import THREADS, require, stories


@pytest.fixture(scope="module")
def model():
    return nbits.Model(require(stories("onnx_int4")), threads=THREADS)


def loop(model, params, turns):
    """Token loop over turns [(ids, n)]: the tokens drawn and the final sequence."""
    g = nbits.Generator(model, params)
    out = []
    for ids, n in turns:
        g.append_tokens(ids)
        for _ in range(n):
            if g.is_done():
                break
            g.generate_next_token()
            out.append(int(g.get_next_tokens()[0]))
            assert g.token_count() == len(g.get_sequence(0))
    return out, list(g.get_sequence(0)), g


def params_for(model, sample, **spec):
    p = nbits.GeneratorParams(model)
    if sample:
        p.set_search_options(do_sample=True, temperature=0.5, top_k=0, random_seed=9)
    else:
        p.set_search_options(do_sample=False)
    if spec:
        p.set_speculative_options(**spec)
    return p


@pytest.mark.parametrize("sample", [False, True])
@pytest.mark.parametrize(
    "spec",
    [
        {"ngram_size": 3, "max_draft_tokens": 5},
        {"ngram_size": 4, "max_draft_tokens": 8, "min_adaptive_k": 1},
        {"draft_model": "self", "max_draft_tokens": 4},
    ],
    ids=["ngram3-fixed", "ngram4-adaptive", "draft-model"],
)
def test_tokens_equal_plain_decoding(model, sample, spec):
    tok = nbits.Tokenizer(model)
    turns = [(tok.encode("Once upon a time"), 29), (tok.encode(" The end. Once upon a time", False), 19)]
    want, want_seq, _ = loop(model, params_for(model, sample), turns)
    spec = dict(spec)
    if spec.get("draft_model") == "self":
        spec["draft_model"] = model  # the model drafting for itself: every draft accepted (greedy)
    got, seq, g = loop(model, params_for(model, sample, **spec), turns)
    assert got == want
    assert seq == want_seq
    stats = g.get_speculative_stats()
    assert stats["target_verify_forward_passes"] > 0
    assert stats["draft_tokens_evaluated"] >= stats["draft_tokens_accepted"] > 0
    assert 0 < stats["acceptance_rate"] <= 1
    assert stats["standard_fallback_steps"] == stats["target_forward_passes"] - stats["rounds"]
    if "draft_model" in spec and not sample:
        assert stats["acceptance_rate"] == 1.0
    if spec.get("min_adaptive_k", 0) == 0:
        assert stats["effective_k"] == spec["max_draft_tokens"]  # fixed width, as onnxruntime-genai


def test_options_are_checked(model):
    p = nbits.GeneratorParams(model)
    assert p.get_speculative_options() == {}
    p.set_speculative_options(ngram_size=4)
    assert p.get_speculative_options() == {
        "ngram_size": 4,
        "max_draft_tokens": 4,
        "min_adaptive_k": 0,
        "cooldown": False,
        "ngram_chained_lookup": False,
    }
    p.set_speculative_options()  # off again
    assert p.get_speculative_options() == {}
    bad = [
        ({"ngram": 4}, "unknown speculative option 'ngram'"),
        ({"ngram_size": 1}, "ngram_size must be 0"),
        ({"ngram_size": 40}, "ngram_size must be an int"),
        ({"ngram_size": 3, "max_draft_tokens": 0}, "max_draft_tokens must be an int in [1, 32]"),
        ({"ngram_size": 3, "min_adaptive_k": 5, "max_draft_tokens": 4}, "above max_draft_tokens"),
        ({"ngram_size": 3, "draft_model": model}, "cannot be combined"),
        ({"draft_model": "model.gguf"}, "draft_model must be an nbits.Model"),
        ({"ngram_size": 3, "ngram_chained_lookup": True}, "not supported yet"),
        ({"ngram_size": 3, "cooldown": 1}, "cooldown must be a bool"),
        ({"max_draft_tokens": 4}, "give ngram_size"),
    ]
    for options, why in bad:
        with pytest.raises(nbits.Error) as e:
            p.set_speculative_options(**options)
        assert why in str(e.value), (options, str(e.value))


def test_guidance_with_speculation_gives_the_same_tokens(model):
    if not nbits._nbits.guidance_available():
        if os.environ.get("CI") == "true":
            pytest.fail("no guidance engine in this build")
        pytest.skip("no guidance engine in this build")
    tok = nbits.Tokenizer(model)
    turns = [(tok.encode("Once upon a time"), 40)]
    regex = "(Lily|Tim) (went|ran) to the (park|shop)[a-z ,.]+"
    guided = params_for(model, False)
    guided.set_guidance("regex", regex)
    want, _, _ = loop(model, guided, turns)
    both = params_for(model, False, ngram_size=3, max_draft_tokens=4)
    both.set_guidance("regex", regex)
    got, _, g = loop(model, both, turns)
    assert got == want
    assert tok.decode(got).split(" ")[0] in ("Lily", "Tim")
