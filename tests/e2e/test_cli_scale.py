"""``--workers``, ``--ray [ADDRESS]``, ``--ray-actors`` on run and sweep: parsing, usage errors."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from infermeter.cli.main import app, optional_values
from infermeter.cli.options import client_scale
from infermeter.errors import ConfigError


def test_ray_without_an_address_means_a_private_local_cluster() -> None:
    assert optional_values(["run", "--ray"]) == ["run", "--ray", "local"]
    assert optional_values(["run", "--ray", "--ray-actors", "2"]) == [
        "run", "--ray", "local", "--ray-actors", "2",
    ]  # fmt: skip
    assert optional_values(["sweep", "--ray", "auto"]) == ["sweep", "--ray", "auto"]


def test_scale_flags_become_http_sut_options() -> None:
    assert client_scale(sut="openai", workers=None) == {}
    assert client_scale(sut="sim", workers=4) == {"workers": "4"}
    assert client_scale(sut="openai", workers=None, ray="auto", ray_actors=8) == {
        "ray": "auto",
        "ray_actors": "8",
    }
    assert client_scale(sut="openai", workers=None, ray="local") == {
        "ray": "local",
        "ray_actors": "0",
    }


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sut": "fake", "workers": 2}, "--workers applies to the HTTP client"),
        ({"sut": "openai", "workers": 0}, "--workers must be >= 1"),
        (
            {"sut": "openai", "workers": None, "ray_actors": 2},
            "--ray-actors needs --ray",
        ),
        ({"sut": "openai", "workers": 2, "ray": "local"}, "not both"),
        ({"sut": "openai", "workers": None, "ray": "x", "ray_actors": 0}, ">= 1"),
    ],
)
def test_bad_scale_flags_are_one_line_usage_errors(
    kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        client_scale(**kwargs)  # type: ignore[arg-type]


def test_workers_on_a_local_sut_is_refused_before_anything_runs() -> None:
    result = CliRunner().invoke(app, ["run", "--sut", "fake", "--workers", "2"])
    assert isinstance(result.exception, ConfigError)
    assert "--workers applies to the HTTP client" in str(result.exception)


def test_run_and_sweep_show_the_scale_options() -> None:
    for command in ("run", "sweep"):
        out = CliRunner().invoke(app, [command, "--help"], terminal_width=200).output
        assert "--workers" in out and "--ray" in out and "--ray-actors" in out
