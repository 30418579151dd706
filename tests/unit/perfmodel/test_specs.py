"""Spec tables: coverage, provenance, lookup errors, user overrides, derived KV bytes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from infermeter.errors import ConfigError
from infermeter.perfmodel.specs import (
    accelerators,
    get_accelerator,
    get_model,
    get_workload,
    match_accelerator,
    models,
)

REQUIRED_ACCELERATORS = {
    "a100-sxm",
    "h100-sxm",
    "h100-pcie",
    "h100-nvl",
    "h200-sxm",
    "h200-nvl",
    "gh200",
    "b200",
    "b300",
    "gb200",
    "gb300",
    "rtx-pro-6000",
    "l40s",
    "mi300x",
    "mi325x",
    "mi350x",
    "mi355x",
    "gaudi3",
    "tpu-v5e",
    "tpu-v6e",
}
REQUIRED_MODELS = {
    "llama2-70b",
    "mixtral-8x7b",
    "gptj-6b",
    "llama3.1-8b",
    "llama3.1-405b",
    "deepseek-r1",
    "gpt-oss-120b",
}


def test_every_required_entry_is_there_with_source_and_date() -> None:
    accs = accelerators()
    assert set(accs) >= REQUIRED_ACCELERATORS
    for acc in accs.values():
        assert acc.source and acc.date
        assert acc.memory_gb > 0 and acc.bandwidth_tbs > 0 and acc.bf16_tflops > 0
    assert set(models()) >= REQUIRED_MODELS


def test_unknown_names_list_the_known_ones() -> None:
    with pytest.raises(
        ConfigError, match=r"Unknown accelerator 'h300'\. Known: .*h100-sxm"
    ):
        get_accelerator("h300")
    with pytest.raises(
        ConfigError, match=r"Unknown model 'llama9'\. Known: .*llama2-70b"
    ):
        get_model("llama9")


def test_aliases_and_mlperf_strings_map_to_skus() -> None:
    assert get_model("llama2-70b-99.9").key == "llama2-70b"
    assert get_workload("llama2-70b-99").osl_mean == pytest.approx(294.45)
    cases = {
        "NVIDIA H200-SXM-141GB-CTS": "h200-sxm",
        "NVIDIA H200": "h200-sxm",  # NVML's name for the part
        "NVIDIA H200-NVL-141GB": "h200-nvl",
        "NVIDIA RTX PRO 6000 Blackwell Server Edition": "rtx-pro-6000",
        "NVIDIA L40S": "l40s",  # not the L4
        "NVIDIA GB200": "gb200",  # not the B200
        "AMD Instinct MI355X 288GB HBM3e": "mi355x",
        "NVIDIA GH200 Grace Hopper Superchip 96GB": "gh200",
        "NVIDIA GH200 Grace Hopper Superchip 144GB": "gh200-144gb",
        "AMD Instinct MI300X-NPS1-SPX-192GB-750W": "mi300x",
        "NVIDIA H100-PCIe-80GB": "h100-pcie",
        "NVIDIA VeraRubin": "vr200",  # v6.1's summary.json, one word
        "NVIDIA VR200": "vr200",
    }
    for raw, key in cases.items():
        acc = match_accelerator(raw)
        assert acc is not None and acc.key == key, raw
    assert match_accelerator("Some CPU") is None


def test_device_names_resolve_and_unknown_parts_list_the_known_ones() -> None:
    assert get_accelerator("NVIDIA H200").key == "h200-sxm"
    assert get_accelerator("b200-sxm").key == "b200"
    with pytest.raises(ConfigError) as err:
        get_accelerator("NVIDIA Z999")
    assert "\n" not in str(err.value) and "mi355x" in str(err.value)


def test_moe_and_mla_shapes_are_derived_from_the_config() -> None:
    ds = get_model("deepseek-r1")
    # 58 MoE layers x 256 experts x 3 x 7168 x 2048 = 653.6 B routed parameters.
    assert ds.expert_params == pytest.approx(653.6e9, rel=0.01)
    assert ds.kv_bytes_per_token("fp8") == 61 * 576  # one latent per layer
    mixtral = get_model("mixtral-8x7b")
    assert mixtral.dense_params == pytest.approx(1.6e9, rel=0.05)


def test_kv_bytes_per_token_match_the_spec() -> None:
    # Spec section 3.1: Llama-2-70B 320 KiB FP16, GPT-J 448 KiB, Llama-3.1-405B 504 KiB.
    assert get_model("llama2-70b").kv_bytes_per_token("fp16") == 320 * 1024
    assert get_model("gptj-6b").kv_bytes_per_token("fp16") == 448 * 1024
    assert get_model("llama3.1-405b").kv_bytes_per_token("fp8") == 252 * 1024


def test_user_file_overrides_and_adds(tmp_path: Path) -> None:
    f = tmp_path / "mine.toml"
    f.write_text(
        "[h100-sxm]\nmemory_gb = 96\nbandwidth_tbs = 4.0\nbf16_tflops = 1000\n"
        '[x9]\nname = "X9"\nmemory_gb = 10\nbandwidth_tbs = 1\nbf16_tflops = 10\n'
    )
    assert get_accelerator("h100-sxm", f).memory_gb == 96
    assert get_accelerator("x9", f).name == "X9"
    assert get_accelerator("h100-sxm").memory_gb == 80  # the package data is untouched


def test_bad_user_files_are_one_line_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        accelerators(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[a]\nmemory_gb = 1\n")
    with pytest.raises(ConfigError, match="lacks field 'bandwidth_tbs'"):
        accelerators(bad)


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("bandwidth_tbs = -2.0", "bandwidth_tbs must be a number > 0 (got -2.0)"),
        ("bandwidth_tbs = nan", "bandwidth_tbs must be a number > 0 (got nan)"),
        ("memory_gb = 0", "memory_gb must be a number > 0 (got 0.0)"),
        ("fp8_tflops = inf", "fp8_tflops must be a number > 0 (got inf)"),
        ("scaleup_domain = 0", "scaleup_domain must be a number > 0"),
        ("scaleup_gbs = -1", "scaleup_gbs must be a number >= 0"),
        ('bf16_tflops = "fast"', "a field is not a number"),
    ],
)
def test_a_user_part_with_a_bad_number_is_a_one_line_config_error(
    tmp_path: Path, line: str, says: str
) -> None:
    # Each used to be accepted (a negative bandwidth reaches the roofline as a
    # speed) or, for text, to end in an internal ValueError.
    fields = {
        "memory_gb": "96",
        "bandwidth_tbs": "2.0",
        "bf16_tflops": "500",
        "scaleup_gbs": "0",  # no scale-up link is allowed
    }
    fields[line.split(" = ")[0]] = line.split(" = ")[1]
    f = tmp_path / "mine.toml"
    f.write_text("[mycard]\n" + "".join(f"{k} = {v}\n" for k, v in fields.items()))
    with pytest.raises(ConfigError, match=re.escape(says)) as info:
        accelerators(f)
    assert "'mycard'" in str(info.value) and "\n" not in str(info.value)


def test_a_user_model_with_a_bad_number_is_a_one_line_config_error(
    tmp_path: Path,
) -> None:
    f = tmp_path / "mine.toml"
    shape = "layers = 32\nd_model = 4096\nheads = 32\nkv_heads = 8\nhead_dim = 128\n"
    f.write_text("[m]\nparams_total = -8e9\n" + shape)
    with pytest.raises(ConfigError, match="params_total must be a number > 0"):
        models(f)
    f.write_text('[m]\nparams_total = "big"\n' + shape)
    with pytest.raises(ConfigError, match="a field is not a number"):
        models(f)


def test_unsupported_precision_names_the_alternatives() -> None:
    with pytest.raises(ConfigError, match="no dense FP8 rate"):
        get_accelerator("a100-sxm").peak_flops("fp8")


def test_speculative_decoding_acceptance_is_a_parameter() -> None:
    import dataclasses

    ds = get_workload("deepseek-r1")
    # 3 drafted tokens, each accepted with probability 0.7 (the documented default).
    assert ds.spec_draft("Interactive") == 3 and ds.spec_acceptance == 0.7
    assert ds.spec_tokens("Interactive") == pytest.approx(1 + 0.7 + 0.49 + 0.343)
    assert ds.spec_tokens("Server") == 1.0
    sure = dataclasses.replace(ds, spec_acceptance=1.0)
    assert sure.spec_tokens("Interactive") == 4.0
    assert get_workload("llama2-70b").spec_tokens("Interactive") == 1.0


def test_matmul_table_sets_the_rate_integer_weights_multiply_at() -> None:
    # Xeon LLM stacks quantise weights only: INT8 weights multiply at the BF16 rate,
    # as INT4 ones do everywhere by default; the Arc Pro B60 runs INT4 at INT8 (W4A8).
    xeon = get_accelerator("xeon-6980p")
    assert xeon.peak_flops("int8") == xeon.peak_flops("bf16") < xeon.int8_tops * 1e12
    assert xeon.peak_flops("int4") == xeon.peak_flops("bf16")
    arc = get_accelerator("arc-pro-b60-dual")
    assert arc.peak_flops("int4") == arc.int8_tops * 1e12 == 2 * arc.peak_flops("bf16")
    h100 = get_accelerator("h100-sxm")  # no table: INT8 at its own rate
    assert h100.peak_flops("int8") == h100.int8_tops * 1e12


def test_a_bad_matmul_table_is_a_one_line_config_error(tmp_path: Path) -> None:
    base = "memory_gb = 1\nbandwidth_tbs = 1\nbf16_tflops = 1\n"
    bad = tmp_path / "bad.toml"
    bad.write_text(f'[a]\n{base}matmul = {{ int8 = "int3" }}\n')
    with pytest.raises(ConfigError, match="matmul int8 = 'int3'"):
        accelerators(bad)
    bad.write_text(f'[a]\n{base}matmul = "bf16"\n')
    with pytest.raises(ConfigError, match="must be a table"):
        accelerators(bad)
    good = tmp_path / "good.toml"
    good.write_text(f'[a]\n{base}int8_tops = 2\nmatmul = {{ int8 = "bf16" }}\n')
    assert accelerators(good)["a"].peak_flops("int8") == 1e12


def test_a_part_sustains_no_more_operations_per_watt_than_its_generation_base(
    tmp_path: Path,
) -> None:
    # B300 claims 13.5 PF of FP4 at 1,100 W, 12.3 TFLOPS per watt against B200's
    # 9.0 (9 PF at 1,000 W): it is held to 9.0 x 1,100 = 9.9 PF. Its FP8 and BF16
    # (B200's at more watts) and B200 itself keep their datasheet rates.
    b300, b200 = get_accelerator("b300"), get_accelerator("b200")
    assert b300.fp4_tflops == 13500  # the datasheet figure stays on record
    assert b300.peak_flops("fp4") == pytest.approx(9.9e15)
    assert b300.peak_flops("fp8") == b300.fp8_tflops * 1e12
    assert b200.power_caps == () and b200.peak_flops("fp4") == 9.0e15
    # The H100 PCIe (350 W) is held to H100 SXM's FP8 per watt (1,979 at 700 W).
    pcie = get_accelerator("h100-pcie")
    assert pcie.peak_flops("fp8") == pytest.approx(350 * 1979 / 700 * 1e12)
    # MLPerf strings resolve to the bound part; a part of another generation, or
    # under its base's rate per watt (GB200: 10 PF at 1,200 W), keeps its own.
    assert match_accelerator("NVIDIA B300-SXM-270GB") == b300
    assert get_accelerator("gb200").power_caps == ()
    assert get_accelerator("vr200").power_caps == ()  # no base part of Rubin
    # A user's part of a known generation is bound the same way.
    f = tmp_path / "mine.toml"
    f.write_text(
        '[hot]\narch = "blackwell"\nmemory_gb = 180\nbandwidth_tbs = 8\n'
        "bf16_tflops = 2250\nfp4_tflops = 20000\ntdp_w = 1000\n"
    )
    assert get_accelerator("hot", f).peak_flops("fp4") == pytest.approx(9.0e15)
