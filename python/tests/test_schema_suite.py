"""100 generated JSON schemas (bench/guidance/schemas.py: nesting, $defs/$ref, anyOf, formats,
patterns, bounds) answered by the real SmolLM2-135M-Instruct with set_guidance: every finished
reply parses and validates (jsonschema, formats checked as draft 2020-12 defines them, with
rfc3339-validator for times), and most finish within the token limit (a weak model can write a
number's digits or a string's characters up to the limit; what it wrote is still a valid prefix)."""

import json
import os
import sys

import jsonschema
import pytest

import nbits
from conftest import ROOT, THREADS, in_ci, require, smollm2_gguf

sys.path.insert(0, os.path.join(ROOT, "bench", "guidance"))
from schemas import format_checker, make_schemas  # noqa: E402

N = 100
MAX_TOKENS = 200


@pytest.fixture(scope="module")
def model():
    if not nbits._nbits.guidance_available():
        if in_ci():
            pytest.fail("this build has no guidance engine (cargo)")
        pytest.skip("this build has no guidance engine (cargo)")
    return nbits.Model(require(smollm2_gguf(), "SmolLM2 GGUF (tools/setup_models.sh)"), threads=THREADS)


def test_generated_schemas_validate(model):
    tok = nbits.Tokenizer(model)
    checker = format_checker()
    finished, failures = 0, []
    for name, prompt, schema in make_schemas(N, seed=1):
        params = nbits.GeneratorParams(model)
        params.set_search_options(do_sample=False, max_length=4096)
        params.set_guidance("json_schema", json.dumps(schema))
        g = nbits.Generator(model, params)
        g.append_tokens(tok.encode(tok.apply_chat_template([{"role": "user", "content": prompt}])))
        ids = []
        while not g.is_done() and len(ids) < MAX_TOKENS:
            g.generate_next_token()
            ids.append(int(g.get_next_tokens()[0]))
        if not g.is_done():
            continue  # cut at MAX_TOKENS: a prefix of a valid reply, not judged
        finished += 1
        text = tok.decode(ids)
        try:
            jsonschema.validate(json.loads(text), schema, format_checker=checker)
        except Exception as e:  # noqa: BLE001 - every failure is reported with its schema
            failures.append(f"{name}: {type(e).__name__}: {str(e)[:200]}\n  schema {json.dumps(schema)}\n  reply {text!r}")
    assert not failures, "\n".join(failures)
    assert finished >= 0.75 * N, f"only {finished}/{N} replies finished within {MAX_TOKENS} tokens"
    print(f"{finished}/{N} replies finished within {MAX_TOKENS} tokens, all valid")
