"""Capacity planner: the 100-users claim, cheapest choice, bad input."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

import pytest

from infermeter.errors import ConfigError
from infermeter.perfmodel.calibrate import coefficients_to_dict, load_coefficients
from infermeter.perfmodel.plancheck import simulate_option
from infermeter.perfmodel.planner import (
    Infeasible,
    Option,
    Targets,
    plan,
    plan_accelerator,
    prices,
)
from infermeter.perfmodel.plannotes import (
    SLOW_WORKLOAD,
    calibration_note,
    evidence_note,
    first_round_note,
    weight_only_note,
    workload_speed,
)
from infermeter.perfmodel.systems import build_system

OLD = "v4.1+v5.1"  # the fit some tests' premises hold for (no v6.1 rows)
TARGET = Targets(users=100, tokens_per_user=30, ttft_ms=2000, isl=1000, osl=300)


def test_llama2_70b_100_users_at_30_tok_s_needs_about_4_h100() -> None:
    # "About 4 H100 SXM GPUs": 4 at FP8 as prefill/decode pools (two TP2
    # replicas), 8 served aggregated (one TP8 replica: aggregated decode steps also
    # carry the 1,000-token prompts' prefill, which spreads the p99 TPOT; pools'
    # decode steps do not; 6 before the TPOT spread). 33 ms per token is as tight
    # as Llama 2 70B's Interactive bound (40 ms): the plan takes Server's
    # calibrated derate, as an Interactive row does. FP16 plans three TP4
    # replicas (the calibrated derate on the soft-ridge physics; the simulator,
    # which does not derate, holds the p99s with two): one would have to run 100
    # users' decode plus their 1,000-token prompts at 33 ms per token, and the
    # simulator at the same calibrated speed misses that p99 TPOT (below).
    # The figures above are the v4.1 + v5.1 fit's. The shipped fit reads v6.1
    # too (2026-12-01) and plans FP16 as two TP8 replicas (16).
    fit = "v4.1+v5.1"
    fp16 = plan_accelerator("h100-sxm", "llama2-70b", TARGET, precision="fp16", fit=fit)
    fp8 = plan_accelerator("h100-sxm", "llama2-70b", TARGET, precision="fp8", fit=fit)
    pools = plan_accelerator(
        "h100-sxm", "llama2-70b", TARGET, precision="fp8", disaggregated=True, fit=fit
    )
    today = plan_accelerator("h100-sxm", "llama2-70b", TARGET, precision="fp16")
    assert isinstance(today, Option) and today.tpot_ms <= 1000 / 30
    assert isinstance(fp16, Option) and isinstance(fp8, Option)
    assert isinstance(pools, Option) and pools.disaggregated
    assert (pools.accelerators, pools.tp) == (4, 2)
    assert (fp8.accelerators, fp8.tp) == (8, 8)
    assert (fp16.accelerators, fp16.tp) == (12, 4)
    for opt in (fp16, fp8):
        assert opt.tpot_ms <= 1000 / 30 and opt.ttft_ms < 2000
        lo, hi = opt.accelerators_band
        assert lo <= opt.accelerators <= hi
    one = dataclasses.replace(fp16, replicas=1, accelerators=4)
    alone = simulate_option(one, "llama2-70b", TARGET, requests=1500, fit=fit)
    assert alone is not None and alone.tpot_p99_ms > 1000 / 30


def test_cheapest_option_per_type_and_sorted_by_cost() -> None:
    rows = plan(
        "llama2-70b", TARGET, accelerator_names=["h100-sxm", "a100-sxm", "h200-sxm"]
    )
    priced = [r for r in rows if isinstance(r, Option)]
    assert [r.accelerator for r in priced] == sorted(
        (r.accelerator for r in priced),
        key=lambda a: next(p.usd_per_hour for p in priced if p.accelerator == a),
    )
    h100 = next(r for r in priced if r.accelerator == "h100-sxm")
    assert h100.precision == "fp8"  # cheaper than the FP16 configuration
    assert h100.usd_per_mtok == pytest.approx(
        h100.usd_per_hour / (100 * 30 * 3600) * 1e6
    )


def test_impossible_configs_say_why_with_numbers() -> None:
    fast = Targets(users=10, tokens_per_user=5000, ttft_ms=2000, isl=1000, osl=300)
    got = plan_accelerator("l4", "llama2-70b", fast)
    assert isinstance(got, Infeasible) and "ms per token" in got.reason
    a100 = plan_accelerator("a100-sxm", "llama2-70b", TARGET, precision="fp8")
    assert isinstance(a100, Infeasible) and "no FP8 rate" in a100.reason
    # Unloaded, a 4,000-token prompt prefills in 350 ms on TP4 or more; its p99
    # (3.4x longer prompts, queued behind others) does not on any shape.
    tight = Targets(users=50, tokens_per_user=25, ttft_ms=350, isl=4000, osl=300)
    got = plan_accelerator("h200-sxm", "llama2-70b", tight, precision="fp8")
    assert isinstance(got, Infeasible)
    assert "p99 TTFT or TPOT misses the target" in got.reason
    assert "x even at the lightest load" in got.reason


def test_moe_plans_keep_one_copy_of_the_experts_per_replica() -> None:
    # DeepSeek-R1 (671 B, FP4 experts) cannot fit one B200: the plan spreads it.
    target = Targets(users=60, tokens_per_user=50, ttft_ms=2000, isl=800, osl=4000)
    got = plan_accelerator("b200", "deepseek-r1", target)
    assert isinstance(got, Option) and got.tp >= 2
    assert got.tpot_ms <= 20 and got.accelerators % got.tp == 0


def test_an_fp4_checkpoint_is_planned_weight_only_where_the_part_lacks_fp4() -> None:
    # gpt-oss-120b's MXFP4 experts: one 80 GB H100 holds them as shipped (its
    # model card); at FP8 the 117 B parameters need two. The plan says how it runs.
    few = Targets(users=4, tokens_per_user=20, ttft_ms=2000, isl=1000, osl=300)
    fp4 = plan_accelerator("h100-sxm", "gpt-oss-120b", few)
    fp8 = plan_accelerator("h100-sxm", "gpt-oss-120b", few, precision="fp8")
    assert isinstance(fp4, Option) and isinstance(fp8, Option)
    assert (fp4.precision, fp4.accelerators, fp8.accelerators) == ("fp4", 1, 2)
    note = weight_only_note("gpt-oss-120b", [fp4, fp8])
    assert note is not None and "h100-sxm" in note and "BF16" in note
    # A part with FP4 math, or a checkpoint that does not ship FP4: no such note.
    b200 = plan_accelerator("b200", "gpt-oss-120b", few)
    assert isinstance(b200, Option) and weight_only_note("gpt-oss-120b", [b200]) is None
    ds = plan_accelerator("h200-sxm", "deepseek-r1", few, precision="fp4")
    assert isinstance(ds, Infeasible) and "no FP4 rate" in ds.reason
    # Systems built from names run the checkpoint as shipped there too.
    one = build_system("h100-sxm", 1, "gpt-oss-120b")
    assert (one.deployment.precision, one.deployment.tp) == ("fp4", 1)
    assert build_system("h100-sxm", 2, "llama2-70b").deployment.precision == "fp8"


def test_bad_targets_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="--users must be >= 1"):
        Targets(users=0, tokens_per_user=30, ttft_ms=2000, isl=10, osl=10)
    with pytest.raises(ConfigError, match="Unknown model"):
        plan("llama9", TARGET)
    # Not a table of "no INT3 rate" for every part with exit 0: one error.
    with pytest.raises(ConfigError, match="Unknown precision 'int3'; use one of"):
        plan("llama2-70b", TARGET, precision="int3")


def test_disaggregated_pools_are_an_option_that_never_costs_more() -> None:
    long_prompts = Targets(
        users=200, tokens_per_user=50, ttft_ms=2000, isl=2000, osl=300
    )
    mixed = plan_accelerator("h200-sxm", "llama2-70b", long_prompts)
    split = plan_accelerator("h200-sxm", "llama2-70b", long_prompts, disaggregated=True)
    assert isinstance(mixed, Option) and isinstance(split, Option)
    assert not mixed.disaggregated
    assert split.accelerators <= mixed.accelerators
    if split.disaggregated:
        assert split.replicas >= 2  # one prefill and one decode replica at least


def test_a_plan_beyond_the_calibrated_rows_says_it_is_extrapolated(
    tmp_path: Path,
) -> None:
    # The v4.1 + v5.1 fit read DeepSeek-R1 Server rows (TPOT bound 80 ms) only
    # (the shipped fit reads v6.1's Interactive rows of it too).
    def note(model: str, tok_s: float, fit: str | None = OLD) -> str | None:
        t = Targets(users=10, tokens_per_user=tok_s, ttft_ms=2000, isl=800, osl=4000)
        return calibration_note(model, t, fit)

    tight = note("deepseek-r1", 50)
    assert tight is not None and "20 ms per token" in tight and "80 ms" in tight
    # Where a benchmark's own fitted speed is far below the others' (a large-batch
    # gap), the note says the plan may be pessimistic. The shipped fit gives
    # DeepSeek-R1 0.54x (over SLOW_WORKLOAD); one at 0.30x says so.
    shipped = load_coefficients(OLD)
    assert workload_speed(shipped, "deepseek-r1") >= SLOW_WORKLOAD
    assert "other benchmarks" not in tight
    slow = dict(shipped.values)
    slow["bench:deepseek-r1"] = math.log(0.30) - slow.get("moe:moe", 0.0)
    path = tmp_path / "slow.json"
    entry = coefficients_to_dict(dataclasses.replace(shipped, values=slow), ["test"])
    path.write_text(json.dumps({"fits": {"test": entry}}))
    gap = note("deepseek-r1", 50, fit=str(path))
    assert gap is not None and "0.30x the speed of other benchmarks" in gap
    assert "several times fewer accelerators" in gap
    seventy = note("llama2-70b", 30)
    assert seventy is not None and "other benchmarks" not in seventy
    # Its Interactive rows (40 ms) were read, though they carry no effect of their
    # own: the fit's support says so.
    assert "tightest: 40 ms" in seventy
    assert note("llama2-70b", 25) is None
    assert note("deepseek-r1", 10) is None  # 100 ms: inside the published bound
    unseen = note("gpt-oss-120b", 10)
    assert unseen is not None and "no published gpt-oss-120b row" in unseen
    older = note("deepseek-r1", 10, fit="v4.1")  # v4.1 had no DeepSeek-R1
    assert older is not None and "fitted on v4.1" in older


def test_a_plan_says_when_its_part_or_precision_rests_on_thin_evidence(
    tmp_path: Path,
) -> None:
    # The v4.1 + v5.1 fit read no MI355X row and learned its FP16 effect from one
    # system (4x L40S): plans that inherit either say so; an FP8 H100 plan,
    # resting on dozens of systems, does not. (The shipped fit reads v6.1 too,
    # with MI355X rows.)
    unseen = plan(
        "llama2-70b", TARGET, precision="fp8", accelerator_names=["mi355x"], fit=OLD
    )
    note = evidence_note(unseen, OLD)
    assert note is not None and "no published row of mi355x" in note
    assert "all parts' rows" in note  # no CDNA4 part has rows either
    b300 = evidence_note(
        plan("llama2-70b", TARGET, accelerator_names=["b300"], fit=OLD), OLD
    )
    assert b300 is not None and "other blackwell parts' rows" in b300
    fp16 = evidence_note(
        plan(
            "llama2-70b",
            TARGET,
            precision="fp16",
            accelerator_names=["h100-sxm"],
            fit=OLD,
        ),
        OLD,
    )
    assert fp16 is not None and "FP16's fitted effect" in fp16
    assert "one published system" in fp16
    shipped = load_coefficients(OLD)
    assert shipped.support["prec:fp16"] == 1 and shipped.support["prec:fp8"] > 20
    fp8 = plan(
        "llama2-70b", TARGET, precision="fp8", accelerator_names=["h100-sxm"], fit=OLD
    )
    assert evidence_note(fp8, OLD, model="llama2-70b") is None
    # H200 has published rows, DeepSeek-R1 has published rows, but no published
    # system ran DeepSeek-R1 on H200: the plan says its speed joins the two.
    ds_target = Targets(users=20, tokens_per_user=10, ttft_ms=2000, isl=800, osl=4000)
    h200 = plan(
        "deepseek-r1", ds_target, accelerator_names=["h200-sxm", "b200"], fit=OLD
    )
    pair = evidence_note(h200, OLD, model="deepseek-r1")
    assert pair is not None and "no published deepseek-r1 row ran on h200-sxm" in pair
    assert "b200" not in pair  # published DeepSeek-R1 rows ran on B200
    assert shipped.support["pair:deepseek-r1|b200"] >= 1
    assert "pair:deepseek-r1|h200-sxm" not in shipped.support
    # A coefficients file that records no support (older ones) says nothing.
    bare = tmp_path / "bare.json"
    entry = coefficients_to_dict(dataclasses.replace(shipped, support={}), ["test"])
    bare.write_text(json.dumps({"fits": {"test": entry}}))
    assert evidence_note(unseen, fit=str(bare)) is None


def test_each_part_is_planned_on_the_stack_it_runs_unless_told() -> None:
    # TensorRT-LLM runs on NVIDIA parts only: an AMD plan must not inherit its
    # fitted effects. By default AMD (and other non-NVIDIA GPUs) plan on vLLM,
    # the stack their published rows run, and CPUs on PyTorch.
    def one(part: str, stack: str | None = None) -> Option:
        got = plan_accelerator(part, "llama2-70b", TARGET, "fp8", stack=stack)
        assert isinstance(got, Option)
        return got

    assert one("h100-sxm").stack == "trt-llm"
    assert one("mi325x").stack == "vllm"
    assert plan_accelerator("xeon-6980p", "llama3.1-8b", TARGET).stack == "pytorch"
    told = one("mi325x", "trt-llm")
    assert told.stack == "trt-llm"
    # TRT-LLM's fitted effects are faster than vLLM's: the plan it would have
    # made is no larger than the vLLM one.
    assert told.accelerators <= one("mi325x").accelerators
    with pytest.raises(ConfigError, match="Unknown stack 'tensorrt'; use one of"):
        plan("llama2-70b", TARGET, stack="tensorrt")


def test_long_prompt_plans_hold_their_p99s_in_the_simulator() -> None:
    # 4,000-token prompts at a 1 s TTFT: sizing replicas by the mean step alone
    # gave 11 x H200 at TP1, whose simulated p99 TTFT was 2.4 s. The plan now
    # sizes for the p99s under random arrivals and the simulator agrees.
    t = Targets(users=200, tokens_per_user=25, ttft_ms=1000, isl=4000, osl=300)
    opt = plan_accelerator("h200-sxm", "llama2-70b", t, precision="fp8")
    assert isinstance(opt, Option) and not opt.disaggregated
    assert opt.ttft_ms <= 1000 and opt.tpot_ms <= 40
    sim = simulate_option(opt, "llama2-70b", t, requests=1200)
    assert sim is not None and sim.meets(dataclasses.replace(t, ttft_ms=1100))
    assert sim.ttft_p99_ms == pytest.approx(opt.ttft_ms, rel=0.25)
    # The mean-step sizing: 11 x TP1.
    old = dataclasses.replace(opt, tp=1, replicas=11, accelerators=11)
    sim = simulate_option(old, "llama2-70b", t, requests=600)
    assert sim is not None and sim.ttft_p99_ms > 1.5 * 1000
    pools = dataclasses.replace(opt, disaggregated=True)
    assert simulate_option(pools, "llama2-70b", t, requests=600) is None
    with pytest.raises(ConfigError, match="needs >= 10 requests"):
        simulate_option(opt, "llama2-70b", t, requests=5)


def test_a_pcie_card_plan_runs_tensor_parallel_within_a_node() -> None:
    # Llama 2 70B at 20 tok/s per user on L40S: as pipeline stages every token
    # reads the whole model in turn (over 90 ms), and until 2026-12-01 the plan was
    # infeasible for that reason. Serving stacks run tensor parallel over PCIe
    # within a node, and so does the planner now.
    t = Targets(users=100, tokens_per_user=20, ttft_ms=2000, isl=1000, osl=300)
    got = plan_accelerator("l40s", "llama2-70b", t, precision="fp8")
    assert isinstance(got, Option) and 1 < got.tp <= 8
    assert got.tpot_ms <= 50 and got.ttft_ms <= 2000
    nvlink = plan_accelerator("h100-sxm", "llama2-70b", t, precision="fp8")
    assert isinstance(nvlink, Option)
    # A miss that is not about pipeline stages does not get that note.
    no_rate = plan_accelerator("l4", "llama2-70b", t, precision="fp4")
    assert isinstance(no_rate, Infeasible) and "no FP4 rate" in no_rate.reason
    assert "PCIe" not in no_rate.reason


def test_a_tie_in_accelerators_goes_to_a_replica_inside_one_domain() -> None:
    # DeepSeek-R1 for 45 users at 50 tok/s each on B200 needs 16 either as two
    # TP8 replicas (one NVLink board each) or as one TP16 replica spanning two
    # boards over the scale-out link: the same count, so the one-board replica wins.
    t = Targets(users=45, tokens_per_user=50, ttft_ms=2000, isl=804, osl=4043)
    opt = plan_accelerator("b200", "deepseek-r1", t)
    assert isinstance(opt, Option)
    assert opt.tp <= 8 and opt.accelerators % opt.tp == 0


def test_a_plan_for_today_leaves_out_a_first_round_server_level_and_says_so() -> None:
    # The shipped fit learned DeepSeek-R1's own Server level from v5.1, its first
    # round, alone. A plan assumes mature software: it leaves that level out and
    # says so; round_="v5.1" plans with that round's software and needs more.
    t = Targets(users=2000, tokens_per_user=12.5, ttft_ms=2000, isl=804, osl=4043)
    today = plan_accelerator("b200", "deepseek-r1", t, "fp4")
    then = plan_accelerator("b200", "deepseek-r1", t, "fp4", round_="v5.1")
    assert isinstance(today, Option) and isinstance(then, Option)
    assert then.accelerators > today.accelerators
    note = first_round_note("deepseek-r1")
    assert note is not None and "first round (v5.1)" in note
    assert "--round v5.1" in note
    assert first_round_note("deepseek-r1", round_="v5.1") is None
    assert first_round_note("llama2-70b") is None  # its level spans rounds
    with pytest.raises(ConfigError, match=r"Unknown round '5\.1'"):
        plan("deepseek-r1", t, accelerator_names=["b200"], round_="5.1")


def test_todays_parts_have_sourced_dated_prices() -> None:
    # Issue 36: plan showed "$/h -" for today's parts; each price names its source
    # and the date it was typed in.
    table = prices()
    for part in ("b300", "gb200", "rtx-pro-6000", "l40s", "mi325x"):
        usd, source, date = table[part]
        assert usd > 0 and source and re.fullmatch(r"\d{4}-\d{2}-\d{2}", date), part
    plan_b300 = plan_accelerator("b300", "llama2-70b", TARGET)
    assert isinstance(plan_b300, Option) and plan_b300.usd_per_hour is not None


def test_pcie_cards_plan_tensor_parallel_within_a_node() -> None:
    # 8x RTX PRO 6000 publish about 6,200 tokens/s of Llama 2 70B Interactive;
    # with PCIe replicas modelled as pipeline stages only, one card's step missed
    # 40 ms a token and the plan asked for 80 cards (or none).
    t = Targets(users=250, tokens_per_user=25, ttft_ms=450, isl=222, osl=290)
    got = plan_accelerator("rtx-pro-6000", "llama2-70b", t)
    assert isinstance(got, Option) and got.accelerators <= 16
    assert 1 < got.tp <= 8 and got.tpot_ms <= 40
