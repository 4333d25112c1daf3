"""Hugging Face Optimum / transformers.js folders through the Python API: the variant keyword,
greedy ids against ONNX Runtime's references (tools/optimum_models/make.py), errors."""

import json
import os

import pytest

import nbits
from conftest import CACHE, THREADS, require
from test_generate import greedy_ids


def optimum_folder(family):
    base = os.environ.get("NBITS_OPTIMUM_MODELS") or os.path.join(CACHE, "optimum-models")
    return os.path.join(base, family)


def ort_ref(family, stem):
    with open(require(os.path.join(optimum_folder(family), "onnx", stem + ".ref.json"),
                      "Optimum export reference (tools/optimum_models/make.py)")) as f:
        return json.load(f)


@pytest.mark.parametrize("variant,stem", [("fp32", "model"), ("q4", "model_q4"), ("fp16", "model_fp16")])
def test_variant_greedy_ids_match_onnx_runtime(variant, stem):
    ref = ort_ref("stories260k", stem)
    model = nbits.Model(optimum_folder("stories260k"), threads=THREADS, variant=variant)
    ids, _ = greedy_ids(model, ref["prompt"], 16)
    assert ids == ref["ids"][:16]


def test_decoder_file_and_default_variant():
    ref = ort_ref("stories260k", "model_q4")
    folder = optimum_folder("stories260k")
    by_file = nbits.Model(os.path.join(folder, "onnx", "model_q4.onnx"), threads=THREADS)
    default = nbits.Model(folder, threads=THREADS)  # q4 first
    for m in (by_file, default):
        assert greedy_ids(m, ref["prompt"], 8)[0] == ref["ids"][:8]


def test_variant_errors():
    folder = optimum_folder("stories260k")
    require(os.path.join(folder, "config.json"), "Optimum export (tools/optimum_models/make.py)")
    with pytest.raises(nbits.Error, match="unknown variant 'q3'"):
        nbits.Model(folder, variant="q3")
    with pytest.raises(nbits.Error, match="requantize_float must be 'keep', 'q8' or 'q4'"):
        nbits.Model(folder, requantize_float="q5")


def test_requantize_float_runs():
    ref = ort_ref("stories260k", "model_q4")
    model = nbits.Model(optimum_folder("stories260k"), threads=THREADS, requantize_float="q8")
    ids, _ = greedy_ids(model, ref["prompt"], 8)
    assert len(ids) == 8
