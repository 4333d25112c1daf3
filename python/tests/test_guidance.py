"""GeneratorParams.set_guidance (onnxruntime-genai's name) on real SmolLM2-135M-Instruct weights:
the og-style loop draws only what keeps the reply valid; jsonschema is the oracle."""

import json
import re

import jsonschema
import pytest

import nbits
from conftest import THREADS, in_ci, require, smollm2_gguf

SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 30},
        "country": {"enum": ["France", "Japan", "Peru"]},
        "population_millions": {"type": "number", "minimum": 0, "maximum": 50},
        "landmarks": {"type": "array", "items": {"type": "string", "maxLength": 30}, "maxItems": 3},
    },
    "required": ["city", "country", "population_millions", "landmarks"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def smollm2():
    if not nbits._nbits.guidance_available():
        msg = "this build has no guidance engine (cargo)"
        if in_ci():
            pytest.fail(msg)
        pytest.skip(msg)
    return nbits.Model(require(smollm2_gguf(), "SmolLM2 GGUF (tools/setup_models.sh)"), threads=THREADS)


def reply(model, params, question, limit=200):
    tok = nbits.Tokenizer(model)
    g = nbits.Generator(model, params)
    g.append_tokens(tok.encode(tok.apply_chat_template([{"role": "user", "content": question}])))
    ids = []
    while not g.is_done() and len(ids) < limit:
        g.generate_next_token()
        ids.append(int(g.get_next_tokens()[0]))
    assert g.is_done(), "the reply did not end within the limit"
    return tok.decode(ids)


@pytest.mark.parametrize("sample", [False, True])
def test_json_schema_reply_validates(smollm2, sample):
    params = nbits.GeneratorParams(smollm2)
    params.set_search_options(do_sample=sample, temperature=0.8, random_seed=7, max_length=1024)
    params.set_guidance("json_schema", json.dumps(SCHEMA))
    text = reply(smollm2, params, "Describe the capital of France as JSON.")
    jsonschema.validate(json.loads(text), SCHEMA)


def test_regex_and_lark(smollm2):
    params = nbits.GeneratorParams(smollm2)
    params.set_search_options(do_sample=False, max_length=1024)
    params.set_guidance("regex", r"[A-Z][a-z]+, [0-9]{4}")
    assert re.fullmatch(r"[A-Z][a-z]+, [0-9]{4}", reply(smollm2, params, "Name a city and a year."))
    params.set_guidance("lark", 'start: "yes" | "no"')
    assert reply(smollm2, params, "Is Paris in France?") in ("yes", "no")
    params.set_guidance("")  # off again
    assert "guidance_type" not in params._generation_options()


def test_bad_specs_raise_with_the_reason(smollm2):
    params = nbits.GeneratorParams(smollm2)
    with pytest.raises(nbits.Error, match="objec"):
        params.set_guidance("json_schema", '{"type": "objec"}')
    with pytest.raises(nbits.Error, match="regex"):
        params.set_guidance("regex", "(unclosed")
    with pytest.raises(nbits.Error, match="json_schema, json_object, regex or lark"):
        params.set_guidance("yaml", "a: 1")
