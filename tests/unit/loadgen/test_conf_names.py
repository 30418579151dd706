"""user.conf lines for a model no conf knows are refused, with "did you mean"."""

from __future__ import annotations

from pathlib import Path

import pytest

from infermeter.errors import ConfFileError
from infermeter.loadgen.conf import (
    apply_conf,
    default_mlperf_conf_text,
    load_conf_text,
    settings_from_confs,
)
from infermeter.loadgen.conf_names import conf_models
from infermeter.loadgen.settings import RunSettings, Scenario

EMBEDDED = conf_models(load_conf_text(default_mlperf_conf_text()))


def user_conf(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "user.conf"
    path.write_text(text)
    return path


def test_a_typo_in_the_model_is_an_error_with_did_you_mean(tmp_path: Path) -> None:
    path = user_conf(tmp_path, "# mine\nllama2_70b.Offline.target_qps = 5\n")
    with pytest.raises(ConfFileError) as raised:
        settings_from_confs("llama2-70b", Scenario.OFFLINE, user_conf_path=path)
    error = raised.value
    assert (error.line_no, error.key) == (2, "llama2_70b.Offline.target_qps")
    assert "unknown model 'llama2_70b'; did you mean 'llama2-70b'?" in str(error)
    assert "LoadGen silently never matches it" in str(error)


def test_every_model_of_the_embedded_conf_is_accepted(tmp_path: Path) -> None:
    """A submitter's one user.conf names every benchmark: none of them is refused."""
    assert {"resnet50", "llama2-70b", "gptj", "3d-unet", "llama3_1-405b"} <= EMBEDDED
    lines = [f"{model}.Offline.target_qps = 7" for model in sorted(EMBEDDED)]
    path = user_conf(tmp_path, "\n".join([*lines, "*.Server.target_qps = 3"]) + "\n")
    settings, _ = settings_from_confs("resnet50", Scenario.OFFLINE, user_conf_path=path)
    assert settings.offline_expected_qps == 7


def test_the_model_asked_for_is_known_even_if_no_conf_names_it(tmp_path: Path) -> None:
    path = user_conf(tmp_path, "my-model.Server.target_qps = 9\n")
    settings, _ = settings_from_confs("my-model", Scenario.SERVER, user_conf_path=path)
    assert settings.server_target_qps == 9


def test_audit_config_models_are_checked_too(tmp_path: Path) -> None:
    audit = tmp_path / "audit.config"
    audit.write_text("resnet_50.*.performance_issue_unique = 1\n")
    with pytest.raises(ConfFileError, match="did you mean 'resnet50'"):
        settings_from_confs("resnet50", Scenario.OFFLINE, audit_conf_path=audit)


def test_the_lenient_drop_in_path_warns_instead(tmp_path: Path) -> None:
    """The mlperf_loadgen drop-in reads confs as LoadGen does: a warning, not an error."""
    entries = load_conf_text("llama2_70b.Offline.target_qps = 5\n", "user.conf")
    settings = RunSettings(scenario=Scenario.OFFLINE)
    warnings = apply_conf(
        settings,
        entries,
        model="llama2-70b",
        scenario=Scenario.OFFLINE,
        conf_type="user",
    )
    assert any("did you mean 'llama2-70b'" in w for w in warnings)
    assert settings.offline_expected_qps == RunSettings().offline_expected_qps
