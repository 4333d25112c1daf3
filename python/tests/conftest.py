"""Shared test data for the nbits Python tests.

Data comes from ../shared (NBITS_SHARED overrides) and the builder exports in
~/.cache/nbits (NBITS_BUILDER_MODELS, NBITS_SMOLLM2_GGUF). As in the C++ suites
(tests/support/shared_data.h): with CI=true a missing file fails the test; elsewhere the
test is skipped with a message naming the path.
"""

import os
import shutil

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CACHE = os.environ.get("NBITS_CACHE", os.path.expanduser("~/.cache/nbits"))


def in_ci():
    return os.environ.get("CI") == "true"


def shared_path(rel):
    base = os.environ.get("NBITS_SHARED") or os.path.join(ROOT, "..", "shared")
    return os.path.join(base, rel)


def require(path, what="shared test data"):
    """`path` if it exists; else fail (CI=true) or skip."""
    if not os.path.exists(path):
        msg = f"missing {what}: {path}"
        if in_ci():
            pytest.fail(msg)
        pytest.skip(msg)
    return path


def stories(rel=""):
    return shared_path(os.path.join("models/stories260K", rel))


def builder_model(name):
    base = os.environ.get("NBITS_BUILDER_MODELS") or os.path.join(CACHE, "builder-models")
    return os.path.join(base, name)


def smollm2_gguf():
    return os.environ.get("NBITS_SMOLLM2_GGUF") or os.path.join(
        CACHE, "smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")


def nbits_cli():
    """The C++ CLI of the release build (NBITS_CLI overrides), or None."""
    p = os.environ.get("NBITS_CLI") or os.path.join(ROOT, "build", "nbits")
    if os.path.isfile(p) and os.access(p, os.X_OK):
        return p
    return shutil.which("nbits") if not os.environ.get("NBITS_CLI") else None


# Two threads at most: tests share a 2-core machine with other builds.
THREADS = 1


@pytest.fixture(scope="session")
def stories_int4():
    import nbits
    return nbits.Model(require(stories("onnx_int4")), threads=THREADS)
