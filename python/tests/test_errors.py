"""Bad paths and bad arguments raise nbits.Error with a message naming the problem."""

import os

import numpy as np
import pytest

import nbits
from conftest import THREADS, require, stories


def test_error_is_a_runtime_error():
    assert issubclass(nbits.Error, RuntimeError)


def test_missing_path():
    with pytest.raises(nbits.Error, match="/no/such/model"):
        nbits.Model("/no/such/model")


def test_folder_without_a_model(tmp_path):
    with pytest.raises(nbits.Error) as e:
        nbits.Model(str(tmp_path))
    assert str(tmp_path) in str(e.value)


def test_file_that_is_not_a_model(tmp_path):
    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"not a gguf file at all")
    with pytest.raises(nbits.Error) as e:
        nbits.Model(str(bad))
    assert "model.gguf" in str(e.value)


def test_broken_genai_config(tmp_path):
    (tmp_path / "genai_config.json").write_text("{ not json")
    with pytest.raises(nbits.Error, match="genai_config.json"):
        nbits.Model(str(tmp_path))


@pytest.mark.parametrize(
    "kwargs,needle",
    [
        ({"scales": "int3"}, "scales"),
        ({"kv_cache": "int8"}, "kv_cache"),
        ({"threads": -1}, "threads"),
        ({"accuracy_level": 7}, "accuracy_level"),
        ({"context": -5}, "context"),
    ],
)
def test_bad_model_options(kwargs, needle):
    with pytest.raises(nbits.Error, match=needle):
        nbits.Model(require(stories("onnx_int4")), **kwargs)


def test_wrong_types():
    with pytest.raises(nbits.Error, match="path"):
        nbits.Model(42)
    with pytest.raises(nbits.Error, match="Model"):
        nbits.Tokenizer("not a model")
    with pytest.raises(nbits.Error, match="Model"):
        nbits.Generator(None, None)


def test_providers():
    cfg = nbits.Config(require(stories("onnx_int4")))
    cfg.clear_providers()
    cfg.append_provider("cpu")
    with pytest.raises(nbits.Error, match="cuda"):
        cfg.append_provider("cuda")
    assert nbits.Model(cfg, threads=THREADS).type == "llama"


@pytest.mark.parametrize(
    "opts,needle",
    [
        ({"no_such_option": 1}, "no_such_option"),
        ({"temperature": -1.0}, "temperature"),
        ({"top_p": 1.5}, "top_p"),
        ({"max_length": 0}, "max_length"),
        ({"num_beams": 4}, "num_beams"),
        ({"batch_size": 2}, "batch_size"),
        ({"repetition_penalty": 0}, "repetition_penalty"),
    ],
)
def test_bad_search_options(stories_int4, opts, needle):
    p = nbits.GeneratorParams(stories_int4)
    with pytest.raises(nbits.Error, match=needle):
        p.set_search_options(**opts)


def test_bad_generator_calls(stories_int4):
    g = nbits.Generator(stories_int4)
    with pytest.raises(nbits.Error, match="no token"):
        g.get_next_tokens()
    with pytest.raises(nbits.Error, match="logits"):
        g.get_logits()
    with pytest.raises(nbits.Error, match="index"):
        g.get_sequence(1)
    with pytest.raises(nbits.Error):
        g.append_tokens([1, 100000])  # beyond the 512-token vocabulary
    with pytest.raises(nbits.Error):
        g.append_tokens(np.array([[1, 2], [3, 4]]))  # a batch of two
    with pytest.raises(nbits.Error, match="integers"):
        g.append_tokens(np.array([1.5]))
    g.append_tokens([1, 403])
    with pytest.raises(nbits.Error):
        g.rewind_to(10)  # longer than the sequence
    tok = nbits.Tokenizer(stories_int4)
    with pytest.raises(nbits.Error, match="JSON"):
        tok.apply_chat_template("[{not json")
    with pytest.raises(nbits.Error, match="role"):
        tok.apply_chat_template([{"content": "no role"}])


def test_generator_in_use_by_another_thread_is_refused(stories_int4):
    # Not racy to set up: one thread is inside generate() (a long one) while this one enters.
    import threading

    g = nbits.Generator(stories_int4)
    started = threading.Event()
    errors = []

    def cb(piece):
        started.set()

    t = threading.Thread(target=lambda: g.generate("Once upon a time", cb))
    t.start()
    started.wait(10)
    try:
        g.generate_next_token()
    except nbits.Error as e:
        errors.append(str(e))
    t.join()
    # Either the other thread had finished already, or this call was refused by name.
    assert not errors or "another thread" in errors[0]
