"""mlperf.conf / user.conf: official semantics, our rejections, and the wheel."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from infermeter.errors import ConfFileError, ConfigError
from infermeter.loadgen.cnumbers import U64_MAX, strtod_full, strtoull_prefix
from infermeter.loadgen.conf import (
    ConfFileNotFoundError,
    _official_line,
    apply_conf,
    default_mlperf_conf_text,
    load_conf_file,
    load_conf_text,
    settings_from_confs,
)
from infermeter.loadgen.settings import Mode, RunSettings, Scenario

MS = 1_000_000


def user(
    text: str, model: str = "m", scenario: Scenario = Scenario.SERVER
) -> tuple[RunSettings, list[str]]:
    """Apply ``text`` as a user.conf on top of defaults (no mlperf.conf)."""
    settings = RunSettings(scenario=scenario)
    entries = load_conf_text(text, "user.conf")
    warnings = apply_conf(
        settings, entries, model=model, scenario=scenario, conf_type="user"
    )
    return settings, warnings


def reject(text: str) -> ConfFileError:
    with pytest.raises(ConfFileError) as info:
        load_conf_text(text, "user.conf")
    return info.value


# -- C number parsing ---------------------------------------------------------


@pytest.mark.parametrize(
    ("token", "value", "used"),
    [
        ("10", 10, 2),
        ("010", 8, 3),
        ("0x1F", 31, 4),
        ("08", 0, 1),
        ("1.5", 1, 1),
        ("1e3", 1, 1),
        ("+5", 5, 2),
        ("-1", U64_MAX, 2),
        ("0x", 0, 1),
        ("abc", 0, 0),
        ("99999999999999999999", U64_MAX, 20),
    ],
)
def test_strtoull_prefix_reads_like_c(token: str, value: int, used: int) -> None:
    prefix = strtoull_prefix(token)
    assert (prefix.value, prefix.used) == (value, used)
    assert prefix.overflow == (token == "99999999999999999999")


@pytest.mark.parametrize(
    ("token", "value"),
    [
        ("1.5", 1.5),
        ("010", 10.0),
        ("0x10", 16.0),
        ("1e3", 1000.0),
        (".5", 0.5),
        ("5.", 5.0),
        ("0x1p3", 8.0),
        ("-inf", -math.inf),
    ],
)
def test_strtod_full_reads_like_c(token: str, value: float) -> None:
    assert strtod_full(token) == value


@pytest.mark.parametrize("token", ["1e", "1_000", "0b11", "1x", "", "0x"])
def test_strtod_full_rejects_partial_numbers(token: str) -> None:
    assert strtod_full(token) is None


@given(st.integers(0, U64_MAX))
def test_decimal_integers_round_trip(n: int) -> None:
    settings, warnings = user(f"*.*.min_query_count = {n}")
    assert settings.min_query_count == n and warnings == []


TOKENS = st.sampled_from(
    [
        "*.*.min_duration",
        "m.Server.target_qps",
        "=",
        "#",
        "#x",
        "5",
        "0x1F",
        "1.5",
        "x",
        "a=b",
        "=5",
        "1e3",
        "-2",
    ]
)


@given(st.lists(TOKENS, max_size=5))
def test_accepted_lines_are_read_by_the_official_tokenizer_too(
    tokens: list[str],
) -> None:
    line = " ".join(tokens)
    try:
        entries = load_conf_text(line)
    except ConfFileError:
        return
    official = _official_line(tokens)
    if entries:
        # we keep a line only when LoadGen stores exactly that one value
        assert official == "value" and len(tokens) == 3
        assert entries[0].value == tokens[2]
    else:
        assert official == "skip" and (not tokens or tokens[0].startswith("#"))


# -- the embedded mlperf.conf -------------------------------------------------


def test_embedded_conf_holds_the_seeds_of_6_0_17() -> None:
    settings, warnings = settings_from_confs("resnet50", Scenario.SERVER)
    assert warnings == []
    assert settings.qsl_rng_seed == 2085463073848966840
    assert settings.sample_index_rng_seed == 2747215439041700203
    assert settings.schedule_rng_seed == 16159082839903944936
    assert settings.scenario is Scenario.SERVER
    assert settings.server_target_latency_ns == 15 * MS
    assert settings.performance_sample_count_override == 1024
    assert settings.min_duration_ms == 600_000
    assert "*.*.qsl_rng_seed = 2085463073848966840" in default_mlperf_conf_text()


@pytest.mark.parametrize(
    ("model", "ttft_ms", "tpot_ms"),
    [
        ("llama2-70b", 2000, 200),
        ("llama2-70b-interactive", 450, 40),
        ("llama3_1-405b", 6000, 175),
        ("llama3_1-405b-interactive", 4500, 80),
        ("llama3_1-8b-interactive", 500, 30),
        ("deepseek-r1-interactive", 1500, 15),
        ("gpt-oss-120b", 3000, 80),
        ("mixtral-8x7b", 2000, 200),
    ],
)
def test_embedded_llm_token_latencies(model: str, ttft_ms: int, tpot_ms: int) -> None:
    settings, _ = settings_from_confs(model, Scenario.SERVER)
    assert settings.use_token_latencies
    assert settings.sample_concatenate_permutation
    assert settings.server_target_latency_ns == 0
    assert (settings.ttft_latency, settings.tpot_latency) == (
        ttft_ms * MS,
        tpot_ms * MS,
    )


def test_embedded_per_benchmark_values() -> None:
    gptj, _ = settings_from_confs("gptj", Scenario.OFFLINE)
    assert gptj.infer_token_latencies and gptj.token_latency_scaling_factor == 69
    assert gptj.min_query_count == 13368 and not gptj.use_token_latencies
    pointpainting, _ = settings_from_confs("pointpainting", Scenario.SINGLE_STREAM)
    assert pointpainting.single_stream_target_latency_percentile == 99.9 * 0.01
    multi, _ = settings_from_confs("retinanet", Scenario.MULTI_STREAM)
    assert multi.min_query_count == 662 and multi.multi_stream_samples_per_query == 8
    assert multi.multi_stream_expected_latency_ns == 528 * MS
    unet, _ = settings_from_confs("3d-unet", Scenario.OFFLINE)
    assert unet.performance_sample_count_override == 0 and unet.min_query_count == 43
    oss, _ = settings_from_confs("gpt-oss-120b", Scenario.OFFLINE)
    assert oss.accuracy_sample_count_override == 4395
    qwen, _ = settings_from_confs("qwen3-vl-235b-a22b", Scenario.SERVER)
    assert not qwen.use_token_latencies and qwen.server_target_latency_ns == 12000 * MS


# -- lookup and precedence ----------------------------------------------------


def test_lookup_order_within_a_file() -> None:
    lines = [
        "*.*.min_duration = 1",
        "m.*.min_duration = 2",
        "*.Server.min_duration = 3",
        "m.Server.min_duration = 4",
    ]
    for n in range(4, 0, -1):
        settings, _ = user("\n".join(lines[:n]))
        assert settings.min_duration_ms == n
    # model.* is less specific than *.scenario
    settings, _ = user("m.*.min_duration = 2\n*.Server.min_duration = 3")
    assert settings.min_duration_ms == 3


def test_generic_keys_use_the_passed_scenario() -> None:
    settings, _ = user("*.Offline.min_duration = 5", scenario=Scenario.SERVER)
    assert settings.min_duration_ms == RunSettings().min_duration_ms
    settings, _ = user("*.Offline.min_duration = 5", scenario=Scenario.OFFLINE)
    assert settings.min_duration_ms == 5


def test_scenario_keys_are_read_under_a_fixed_scenario() -> None:
    text = "\n".join(
        [
            "*.Offline.target_qps = 7",
            "*.Server.target_qps = 9",
            "*.MultiStream.samples_per_query = 4",
            "*.SingleStream.target_latency = 2",
            "*.*.use_token_latencies = 1",
            "*.Server.ttft_latency = 300",
        ]
    )
    settings, _ = user(text, scenario=Scenario.SINGLE_STREAM)
    assert settings.offline_expected_qps == 7.0
    assert settings.server_target_qps == 9.0
    assert settings.multi_stream_samples_per_query == 4
    assert settings.single_stream_expected_latency_ns == 2 * MS
    assert settings.ttft_latency == 300 * MS
    assert settings.scenario is Scenario.SINGLE_STREAM  # FromConfig never sets it


def test_user_conf_overrides_mlperf_conf_regardless_of_specificity(
    tmp_path: Path,
) -> None:
    conf = tmp_path / "user.conf"
    conf.write_text("*.Server.target_latency = 50\n")
    settings, _ = settings_from_confs("resnet50", Scenario.SERVER, user_conf_path=conf)
    assert settings.server_target_latency_ns == 50 * MS


def test_audit_conf_is_applied_last(tmp_path: Path) -> None:
    (tmp_path / "user.conf").write_text("*.*.min_query_count = 10\n")
    (tmp_path / "audit.config").write_text("*.*.min_query_count = 20\n")
    settings, _ = settings_from_confs(
        "m",
        Scenario.SERVER,
        user_conf_path=tmp_path / "user.conf",
        audit_conf_path=tmp_path / "audit.config",
    )
    assert settings.min_query_count == 20


def test_mlperf_only_keys_are_ignored_in_user_conf_with_a_warning(
    tmp_path: Path,
) -> None:
    text = "*.*.qsl_rng_seed = 5\n*.*.accuracy_log_probability = 50\n"
    settings, warnings = user(text)
    assert settings.qsl_rng_seed == 0 and settings.accuracy_log_probability == 0.0
    assert len(warnings) == 2 and all(
        "read only from mlperf.conf" in w for w in warnings
    )
    mlperf = tmp_path / "mlperf.conf"
    mlperf.write_text(text)
    settings, warnings = settings_from_confs(
        "m", Scenario.SERVER, mlperf_conf_path=mlperf
    )
    assert settings.qsl_rng_seed == 5 and settings.accuracy_log_probability == 0.5
    assert warnings == []


# -- values and units ---------------------------------------------------------


def test_units_ms_to_ns_and_percent_to_fraction() -> None:
    text = "\n".join(
        [
            "*.Server.target_latency = 130",
            "*.Server.target_latency_percentile = 99.9",
            "*.*.max_duration = 2500",
            "*.MultiStream.target_latency = 1.5",
        ]
    )
    settings, warnings = user(text)
    assert settings.server_target_latency_ns == 130 * MS
    assert settings.server_target_latency_percentile == 99.9 * 0.01
    assert settings.max_duration_ms == 2500
    assert settings.multi_stream_expected_latency_ns == 1_500_000
    assert warnings == []


def test_octal_integer_is_read_as_octal_with_a_warning() -> None:
    settings, warnings = user("*.*.min_query_count = 010")
    assert settings.min_query_count == 8
    assert (
        len(warnings) == 1 and "octal" in warnings[0] and "user.conf:1" in warnings[0]
    )
    # Double keys go through strtod: a leading zero is decimal there.
    settings, warnings = user("*.Server.target_qps = 010")
    assert settings.server_target_qps == 10.0 and warnings == []


def test_hex_and_fractional_integers_read_like_loadgen() -> None:
    settings, warnings = user(
        "*.*.min_query_count = 0x10\n*.Server.target_latency = 1.5"
    )
    assert settings.min_query_count == 16
    assert settings.server_target_latency_ns == 1 * MS  # integer key: prefix "1"
    assert len(warnings) == 1 and "integer prefix" in warnings[0]


@pytest.mark.parametrize(("value", "mode"), list(enumerate(Mode)))
def test_mode_values(value: int, mode: Mode) -> None:
    settings, _ = user(f"*.*.mode = {value}")
    assert settings.mode is mode


def test_booleans_follow_loadgen() -> None:
    settings, warnings = user("*.*.print_timestamps = 2\n*.*.use_token_latencies = 2")
    assert settings.print_timestamps is True
    assert settings.use_token_latencies is False
    assert len(warnings) == 1 and "only 1 as true" in warnings[0]


def test_gated_keys_are_read_only_when_the_gate_is_on() -> None:
    settings, warnings = user(
        "*.Server.ttft_latency = 300\n*.*.token_latency_scaling_factor = 9"
    )
    assert settings.ttft_latency == RunSettings().ttft_latency
    assert settings.token_latency_scaling_factor == 0
    assert len(warnings) == 2 and all("only when" in w for w in warnings)


def test_duplicate_key_last_wins_with_a_warning() -> None:
    settings, warnings = user("*.*.min_duration = 5\n*.*.min_duration = 6")
    assert settings.min_duration_ms == 6
    assert warnings == [
        "user.conf:2: *.*.min_duration: overrides line 1 (the last wins)"
    ]


def test_unused_scenario_entry_warns() -> None:
    _, warnings = user("*.Offline.samples_per_query = 4")
    assert len(warnings) == 1 and "only under MultiStream" in warnings[0]


def test_comments_blank_lines_and_crlf_are_fine() -> None:
    text = (
        "# a comment\r\n\r\n   \t\r\n*.*.min_duration = 7 \r\n"
        "# *.*.min_duration = 9\r\n#x\r\n"
    )
    settings, warnings = user(text)
    assert settings.min_duration_ms == 7 and warnings == []


# -- rejections where LoadGen is silently wrong -------------------------------


def test_key_equals_value_without_spaces_is_rejected() -> None:
    error = reject("# header\n*.Server.target_qps=100")
    assert (error.path, error.line_no, error.key) == (
        "user.conf",
        2,
        "*.Server.target_qps=100",
    )
    assert "spaces around '='" in str(error) and "silently ignores" in str(error)
    assert "\n" not in str(error)


def test_trailing_comment_is_rejected_with_the_official_outcome() -> None:
    error = reject("*.Server.target_qps = 100 # peak")
    assert "-EINVAL" in str(error) and "own line" in str(error)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("*.*.min_duraton = 5", "did you mean 'min_duration'"),
        ("*.*.Min_Duration = 5", "did you mean 'min_duration'"),
        ("*.Sever.target_qps = 5", "did you mean 'Server'"),
        ("*.server.target_qps = 5", "did you mean 'Server'"),
        ("*.*.min_duration = five", "not a number"),
        ("*.*.min_duration = 1 2", "keeps the last"),
        ("*.*.min_duration = 1 x", "-EINVAL"),
        ("min_duration = 5", "model.scenario.key"),
        ("*.*.min_duration =", "no value"),
        ("*.*.min_duration", "expected 'model.scenario.key = value'"),
        ("*.*.min_duration 5", "expected"),
        ("*.*.min_duration # note", "no value"),
        ("*.*.min_duration =5", "spaces around '='"),
        ("#no space comment", "'# ' with a space"),
    ],
)
def test_bad_lines_are_rejected(text: str, fragment: str) -> None:
    assert fragment in str(reject(text))


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("*.*.min_duration = -1", "negative"),
        ("*.*.min_duration = 99999999999999999999", "above 2**64"),
        ("*.Server.target_latency = 20000000000000", "above 2**64"),
        ("*.Server.max_async_queries = 4294967296", "32-bit"),
        ("*.*.mode = 7", "mode must be 0..3"),
        ("*.Server.target_qps = nan", "not a finite number"),
    ],
)
def test_values_loadgen_misreads_are_rejected(text: str, fragment: str) -> None:
    with pytest.raises(ConfFileError, match=None) as info:
        user(text)
    assert fragment in str(info.value) and info.value.line_no == 1


def test_missing_file_is_distinguishable_from_a_parse_error(tmp_path: Path) -> None:
    with pytest.raises(ConfFileNotFoundError) as info:
        load_conf_file(tmp_path / "nope.conf")
    assert isinstance(info.value, FileNotFoundError)
    assert isinstance(info.value, ConfigError)
    assert not isinstance(info.value, ConfFileError)
    assert "nope.conf" in str(info.value)


# -- the official wheel -------------------------------------------------------
# The wheel applies its embedded mlperf.conf on the FIRST FromConfig call of a
# process only, so every user.conf comparison runs in a fresh interpreter.
# conf_type 0 applies only the embedded mlperf.conf (the path is ignored), on
# every call: the embedded sweep runs in one interpreter.

OFFICIAL_SCRIPT = r"""
import json, sys
import mlperf_loadgen as lg

def dump(ts):
    out = {}
    for name in dir(ts):
        if name.startswith("_") or name == "FromConfig":
            continue
        value = getattr(ts, name)
        out[name] = value.name if hasattr(value, "name") else value
    return out

results = []
for case in json.loads(sys.argv[1]):
    ts = lg.TestSettings()
    rc = ts.FromConfig(case["path"], case["model"], case["scenario"], case["conf_type"])
    results.append({"rc": rc, "fields": dump(ts)})
print(json.dumps(results))
"""


def run_official(cases: list[dict[str, object]]) -> list[dict[str, object]]:
    import json
    import subprocess
    import sys

    pytest.importorskip("mlperf_loadgen")
    done = subprocess.run(
        [sys.executable, "-c", OFFICIAL_SCRIPT, json.dumps(cases)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    # The wheel may print its own log lines; the JSON is the last line.
    result: list[dict[str, object]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def ours_as_official(settings: RunSettings, names: list[str]) -> dict[str, object]:
    out: dict[str, object] = {}
    for name in names:
        value = getattr(settings, name)
        out[name] = value.value if isinstance(value, Mode) else value
    return out


def assert_same_fields(official: dict[str, object], settings: RunSettings) -> None:
    fields = dict(official)
    fields.pop("scenario")  # FromConfig never sets it; ours carries the run's scenario
    assert set(fields) <= set(RunSettings.__dataclass_fields__)
    assert ours_as_official(settings, sorted(fields)) == fields


VALID_USER_CONFS = [
    (
        "resnet50",
        "Server",
        "*.Server.target_qps = 1234.5\n*.Server.target_latency = 20\n"
        "resnet50.*.performance_sample_count_override = 2048\n*.*.mode = 2\n",
    ),
    (
        "llama2-70b",
        "Server",
        "llama2-70b.Server.ttft_latency = 1000\n*.Server.tpot_latency = 100\n"
        "*.Server.coalesce_queries = 1\n*.Server.max_async_queries = 64\n",
    ),
    (
        "resnet50",
        "Offline",
        "*.Offline.target_qps = 0x10\n*.*.min_query_count = 010\n"
        "*.*.min_duration = 1e3\n*.*.accuracy_log_sampling_target = 100\n",
    ),
    (
        "retinanet",
        "MultiStream",
        "*.MultiStream.target_latency = 1.5\n*.MultiStream.samples_per_query = 4\n"
        "*.MultiStream.target_latency_percentile = 99.9\n*.*.print_timestamps = 2\n",
    ),
    (
        "gptj",
        "SingleStream",
        "# comment\n\n#x\n*.SingleStream.target_latency = 7\n"
        "*.*.token_latency_scaling_factor = 70\n*.*.performance_issue_same = 1\n"
        "*.*.performance_issue_same_index = 3\n*.*.accuracy_log_rng_seed = 42\n",
    ),
    (
        "my-model",
        "Server",
        "*.*.qsl_rng_seed = 5\n*.*.use_token_latencies = 1\n"
        "*.Server.ttft_latency = 300\n*.*.sample_concatenate_permutation = 1\n"
        "*.*.max_duration = 90000\n"
        "*.*.max_query_count = 5000\n*.*.accuracy_sample_count_override = 77\n",
    ),
    ("qwen3-vl-235b-a22b", "Server", "*.Server.ttft_latency = 300\n*.*.mode = 1\n"),
    (
        "resnet50",
        "Server",
        "resnet50.Server.min_duration = 4\n*.Server.min_duration = 3\n"
        "resnet50.*.min_duration = 2\n*.*.min_duration = 1\n"
        "*.Server.min_duration = 5\n",
    ),
    (
        "llama2-70b-interactive",
        "Server",
        "*.Server.target_qps = 3.3\n*.*.use_token_latencies = 0\n"
        "*.*.performance_issue_unique = 1\n",
    ),
]


@pytest.mark.official
@pytest.mark.parametrize(("model", "scenario", "text"), VALID_USER_CONFS)
def test_valid_user_conf_reads_like_the_official_wheel(
    tmp_path: Path, model: str, scenario: str, text: str
) -> None:
    conf = tmp_path / "user.conf"
    conf.write_text(text)
    [official] = run_official(
        [{"path": str(conf), "model": model, "scenario": scenario, "conf_type": 1}]
    )
    assert official["rc"] == 0
    ours, _ = settings_from_confs(model, Scenario.parse(scenario), user_conf_path=conf)
    assert isinstance(official["fields"], dict)
    assert_same_fields(official["fields"], ours)


EMBEDDED_MODELS = sorted(
    {
        line.split(".", 1)[0]
        for line in default_mlperf_conf_text().splitlines()
        if line and not line.startswith(("#", "*"))
    }
    | {"unknown-model"}
)


@pytest.mark.official
def test_embedded_mlperf_conf_matches_the_wheel_for_every_model(tmp_path: Path) -> None:
    cases = [
        {
            "path": str(tmp_path / "unused"),
            "model": m,
            "scenario": s.value,
            "conf_type": 0,
        }
        for m in EMBEDDED_MODELS
        for s in Scenario
    ]
    results = run_official(cases)
    for case, official in zip(cases, results, strict=True):
        ours, _ = settings_from_confs(
            str(case["model"]), Scenario.parse(str(case["scenario"]))
        )
        assert isinstance(official["fields"], dict)
        assert_same_fields(official["fields"], ours)
    assert {"llama2-70b", "gpt-oss-120b-interactive", "unknown-model"} <= set(
        EMBEDDED_MODELS
    )


@pytest.mark.official
@pytest.mark.parametrize(
    ("text", "official_rc", "official_min_duration_ms"),
    [
        ("*.*.min_duration=5\n", 0, 600_000),  # silently ignored
        ("*.*.min_duraton = 5\n", 0, 600_000),  # typo silently ignored
        ("*.*.min_duration = 5 # five\n", -22, None),  # whole file rejected
        ("*.*.min_duration = 5 6\n", 0, 6),  # the last value silently wins
    ],
)
def test_official_quirks_we_reject(
    tmp_path: Path, text: str, official_rc: int, official_min_duration_ms: int | None
) -> None:
    conf = tmp_path / "user.conf"
    conf.write_text(text)
    [official] = run_official(
        [{"path": str(conf), "model": "resnet50", "scenario": "Server", "conf_type": 1}]
    )
    assert official["rc"] == official_rc
    fields = official["fields"]
    assert isinstance(fields, dict)
    if official_min_duration_ms is not None:
        assert fields["min_duration_ms"] == official_min_duration_ms
    with pytest.raises(ConfFileError):
        load_conf_file(conf)


@pytest.mark.official
def test_official_missing_file_is_enoent(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.conf")
    [official] = run_official(
        [{"path": missing, "model": "resnet50", "scenario": "Server", "conf_type": 1}]
    )
    assert official["rc"] == -2
    with pytest.raises(FileNotFoundError):
        settings_from_confs("resnet50", Scenario.SERVER, user_conf_path=missing)


def official_embedded_conf() -> str:
    """The mlperf.conf text compiled into the wheel (a C string in the binary)."""
    lg = pytest.importorskip("mlperf_loadgen")
    binary = Path(str(lg.__file__)).read_bytes()
    start = binary.find(b"# The format of this config file")
    if start < 0:
        pytest.skip(
            "this mlperf_loadgen build has no recognisable embedded mlperf.conf"
        )
    return binary[start : binary.index(b"\0", start)].decode()


@pytest.mark.official
def test_the_official_mlperf_conf_passes_our_strict_parser(tmp_path: Path) -> None:
    conf = tmp_path / "mlperf.conf"
    conf.write_text(official_embedded_conf())
    entries = load_conf_file(conf)
    assert len(entries) > 100
    for model in EMBEDDED_MODELS:
        for scenario in Scenario:
            theirs, warnings = settings_from_confs(
                model, scenario, mlperf_conf_path=conf
            )
            ours, _ = settings_from_confs(model, scenario)
            assert theirs == ours and warnings == []
