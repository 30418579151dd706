"""``infermeter agentic``: check, synth and run, with their exit codes and files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infermeter.servers.mock import MockConfig, MockServer
from infermeter.servers.mock_agentic import AgenticStream
from tests.cli_main import run_main

USER = {
    "conversation_id": "c1",
    "turn": 1,
    "role": "user",
    "system": "s",
    "content": "go",
}
CALL = {"id": "k", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
BAD = {
    "turns out of order": (
        [USER, {"conversation_id": "c1", "turn": 3, "role": "assistant", "content": "x"}],
        "t.jsonl:2: turn: conversation 'c1' has turn 3 where turn 2 is due",
    ),
    "an assistant row before any user row": (
        [{"conversation_id": "c1", "turn": 1, "role": "assistant", "content": "x"}],
        "t.jsonl:1: role: conversation 'c1' starts with a 'assistant' row",
    ),
    "a tool result without a call": (
        [
            USER,
            {"conversation_id": "c1", "turn": 2, "role": "assistant", "content": "x"},
            {"conversation_id": "c1", "turn": 3, "role": "tool",
             "tool_results": [{"tool_call_id": "k", "content": "y"}]},
        ],
        "t.jsonl:3: tool_results: conversation 'c1' turn 3: a tool result without a call",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_malformed_file_is_one_line_exit_2_and_no_run_folder(
    tmp_path: Path, case: str
) -> None:
    rows, where = BAD[case]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    checked = run_main("agentic", "check", str(path))
    assert checked.code == 2
    assert checked.stderr.startswith(f"error: {tmp_path}/{where}")
    assert checked.stderr.count("\n") == 1
    folder = tmp_path / "run"
    ran = run_main(
        "agentic", "run", "--url", "http://127.0.0.1:9/v1", "--model", "m",
        "--dataset", str(path), "--output-dir", str(folder),
    )  # fmt: skip
    assert ran.code == 2 and ran.stderr.count("\n") == 1
    assert f"{tmp_path}/{where}" in ran.stderr
    assert not folder.exists()


def test_synth_then_check_then_run_against_serve_mock(tmp_path: Path) -> None:
    path = tmp_path / "syn.jsonl"
    made = run_main("agentic", "synth", str(path), "--count", "6", "--seed", "3")
    assert made.code == 0 and path.exists(), made.output
    checked = run_main("agentic", "check", str(path))
    assert checked.code == 0 and "6 trajectories" in checked.stdout
    config = MockConfig(
        mode="timed", ttft="const:0.002", itl="const:0.0002",
        agentic=AgenticStream(4, "reasoning_content", "when-tools"),
    )  # fmt: skip
    folder = tmp_path / "run"
    with MockServer(config) as url:
        ran = run_main(
            "agentic", "run", "--url", url, "--model", "mock-model",
            "--dataset", str(path), "--concurrency", "3", "--num-trajectories", "12",
            "--no-tool-delay", "--output-dir", str(folder),
        )  # fmt: skip
    assert ran.code == 0, ran.output
    assert "infermeter results (unverified)" in ran.stdout
    assert "not an official run: no --benchmark named" in ran.stderr
    doc = json.loads((folder / "agentic.json").read_text())
    assert doc["metrics"]["trajectories_completed"] == 12
    assert doc["metrics"]["turns_failed"] == 0
    # the HTTP client's own counts: every turn answered, tokens from usage
    assert doc["client"]["completed"] == doc["metrics"]["turns_issued"]
    assert doc["client"]["failed"] == 0
    assert doc["client"]["token_counts"]["source"] == "usage"
    assert doc["official"] is False and doc["settings"]["concurrency"] == 3
    lines = (folder / "turns.jsonl").read_text().splitlines()
    assert len(lines) == doc["metrics"]["turns_issued"]
    first = json.loads(lines[0])
    assert first["status"] == "ok" and first["ttft_s"] > 0 and first["tool_calls"] == 1
    again = run_main(
        "agentic", "run", "--url", "http://127.0.0.1:9/v1", "--model", "m",
        "--dataset", str(path), "--output-dir", str(folder),
    )  # fmt: skip
    assert again.code == 2 and "already holds files" in again.stderr


def test_a_benchmark_judges_the_run_and_a_failed_gate_exits_3(tmp_path: Path) -> None:
    # 450 tokens a turn: inside Kimi K3's OSL window (425-520); the mock always
    # runs `ls`, the synthetic trajectories mostly other commands: accuracy fails.
    config = MockConfig(
        mode="timed", ttft="const:0.001", itl="const:0.00001",
        output_tokens="const:450",
        agentic=AgenticStream(100, "reasoning_content", "when-tools"),
    )  # fmt: skip
    folder = tmp_path / "run"
    with MockServer(config) as url:
        ran = run_main(
            "agentic", "run", "--url", url, "--model", "mock-model",
            "--synthetic", "3", "--benchmark", "kimi-k3", "--no-tool-delay",
            "--output-dir", str(folder),
        )  # fmt: skip
    assert ran.code == 3, ran.output
    assert "accuracy FAIL, OSL PASS" in ran.stdout
    assert "gates failed: inline accuracy" in ran.stderr
    doc = json.loads((folder / "agentic.json").read_text())
    assert doc["metrics"]["osl_per_turn_mean"] == 450
    assert doc["verdict"]["accuracy"] == "FAIL"
    assert doc["not_official_because"][:2] == [
        "synthetic trajectories, not the official dataset",
        "the dataset has 3 trajectories, not the official 613",
    ]


def test_bad_settings_are_usage_errors(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    base = ["agentic", "run", "--url", "http://127.0.0.1:9/v1", "--model", "m"]
    multiple = run_main(*base, "--synthetic", "4", "--num-trajectories", "6",
                        "--output-dir", str(folder))  # fmt: skip
    assert multiple.code == 2
    assert "num_trajectories 6: need a positive multiple" in multiple.stderr
    unknown = run_main(*base, "--synthetic", "4", "--benchmark", "kimi-k9",
                       "--output-dir", str(folder))  # fmt: skip
    assert unknown.code == 2 and "Unknown agentic benchmark 'kimi-k9'" in unknown.stderr
    nothing = run_main(*base, "--output-dir", str(folder))
    assert nothing.code == 2 and "--dataset FILE or --synthetic N" in nothing.stderr
    no_key = run_main(*base, "--synthetic", "4", "--api-key-env", "INFERMETER_NO_KEY",
                      "--output-dir", str(folder))  # fmt: skip
    assert no_key.code == 2 and no_key.stderr.count("\n") == 1
    assert "'INFERMETER_NO_KEY' is not set" in no_key.stderr
    assert "--api-key-file PATH" in no_key.stderr
    bad_url = run_main("agentic", "run", "--url", "127.0.0.1:9", "--model", "m",
                       "--synthetic", "4", "--output-dir", str(folder))  # fmt: skip
    assert bad_url.code == 2 and "must start with http://" in bad_url.stderr
    assert not folder.exists()
