"""No leak over 1000 create/destroy cycles: RSS stays bounded (read from /proc/self/status)."""

import gc
import os

import pytest

import nbits
from conftest import THREADS, require, stories


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    pytest.skip("no VmRSS in /proc/self/status")


def cycles(n, body):
    for _ in range(n):
        body()
    gc.collect()


def test_generators_streams_and_views_do_not_leak(stories_int4):
    tok = nbits.Tokenizer(stories_int4)

    def body():
        p = nbits.GeneratorParams(stories_int4)
        p.set_search_options(max_length=12, do_sample=False)
        g = nbits.Generator(stories_int4, p)
        g.append_tokens(tok.encode("Once upon a time"))
        g.generate_next_token()
        g.get_logits()
        g.get_sequence(0)
        s = tok.create_stream()
        s.decode(g.get_next_tokens()[0])
        try:
            g.get_sequence(3)
        except nbits.Error:
            pass

    cycles(100, body)  # warm-up: allocator pools, caches
    before = rss_kib()
    cycles(1000, body)
    grown = rss_kib() - before
    assert grown < 8 * 1024, f"RSS grew {grown} KiB over 1000 Generator cycles"


def test_models_do_not_leak():
    path = require(stories("onnx_int4"))

    def body():
        m = nbits.Model(path, threads=THREADS)
        g = nbits.Generator(m)
        g.append_tokens([1])
        del g, m
        try:
            nbits.Model("/no/such/model")
        except nbits.Error:
            pass

    cycles(50, body)
    before = rss_kib()
    cycles(1000, body)
    grown = rss_kib() - before
    assert grown < 16 * 1024, f"RSS grew {grown} KiB over 1000 Model cycles"
