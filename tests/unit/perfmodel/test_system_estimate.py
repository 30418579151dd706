"""The anchored prediction of a named system (what the report shows beside a run):
its kind, its anchors by result ID, and nothing read from a round after the fit's."""

from __future__ import annotations

import pytest

from infermeter.errors import ConfigError
from infermeter.perfmodel.plananchor import system_estimate
from infermeter.perfmodel.published import round_file

needs_shared = pytest.mark.skipif(
    not all(round_file(r).exists() for r in ("v4.1", "v5.1")),
    reason="../shared MLPerf summary files (v4.1, v5.1) are absent",
)


@needs_shared
def test_a_published_system_is_anchored_on_its_own_rows_by_result_id():
    got = system_estimate("llama2-70b", "Offline", "h100-sxm", 8, fit="v4.1")
    est = got.estimate
    assert est.kind == "anchored" and (got.stack, got.precision) == ("trt-llm", "fp8")
    top = max(est.anchors, key=lambda a: a.weight)
    assert top.nearness == 0 and top.result_id.startswith("v4.1-")
    assert f"{top.result_id} (same system)" in est.named()
    # A fit of v4.1 reads nothing later, anchors included.
    assert {a.round for a in est.anchors} == {"v4.1"}
    # The anchors carry the level: the prediction is not the model's alone.
    assert est.predicted != pytest.approx(est.modelled, rel=1e-6)


@needs_shared
def test_a_benchmark_the_fit_never_read_is_modelled():
    est = system_estimate("llama3.1-8b", "Offline", "h100-sxm", 8, fit="v4.1").estimate
    assert est.kind == "modelled" and est.anchors == ()
    assert est.predicted == est.modelled > 0
    assert est.named().startswith("modelled")


def test_names_the_model_does_not_know_are_one_line_errors():
    with pytest.raises(ConfigError, match="SingleStream"):
        system_estimate("llama2-70b", "SingleStream", "h100-sxm", 8)
    with pytest.raises(ConfigError):
        system_estimate("llama2-70b", "Offline", "no-such-part", 8)
