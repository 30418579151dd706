"""Token totals against a real llama.cpp server (llama-cpp-python), when it is installed.

Skipped unless ``llama_cpp`` (with its server extra) imports here,
or ``INFERMETER_LLAMA_PYTHON`` names a Python that has it (it builds
llama.cpp from source: a throwaway venv outside the repo is the usual place).
CI does not have it; the llama.cpp-style mock tests pin the same behaviour.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

HERE = Path(__file__).resolve().parents[2] / "benchmarks" / "client"


def _llama_python() -> str:
    python = os.environ.get("INFERMETER_LLAMA_PYTHON")
    if python:
        check = subprocess.run(
            [python, "-c", "import llama_cpp.server"], capture_output=True
        )
        if check.returncode == 0:
            return python
        pytest.skip(f"{python} lacks llama_cpp[server]")
    for name in ("llama_cpp", "uvicorn"):
        if importlib.util.find_spec(name) is None:
            pytest.skip(
                f"{name} is not installed (pip install 'llama-cpp-python[server]')"
            )
    return sys.executable


def test_token_totals_equal_what_llama_cpp_generated(tmp_path: Path) -> None:
    python = _llama_python()
    sys.path.insert(0, str(HERE))
    try:
        from llama_cpp_tokens import measure
    finally:
        sys.path.remove(str(HERE))
    rows = {r.counting: r for r in measure(python, tmp_path, ("completions",))}
    exact = rows["tokenizer"]
    assert exact.source == "tokenizer"
    assert exact.infermeter_tokens == exact.server_tokens > 0
    estimate = rows["chunks"]
    assert estimate.source == "delta_events"  # named as the estimate it is
    # One token per token-bearing chunk: llama-cpp-python sends no chunk for a
    # trailing token that ends inside a UTF-8 character, so it may be a token
    # or two short of its usage; counting only chunks with text is far lower.
    assert 0 <= estimate.server_tokens - estimate.infermeter_tokens <= estimate.samples
    assert estimate.text_chunks_only is not None
    assert estimate.infermeter_tokens > estimate.text_chunks_only
