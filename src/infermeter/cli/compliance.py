"""``infermeter compliance``: verify an MLPerf audit run (TEST01, TEST04, TEST06).

``infermeter run --audit TEST01 ...`` runs the reference and audit runs and
verifies them in one go; this command verifies logs already on disk, ours or
the official LoadGen's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from infermeter.cli.main import EXIT_INVALID, EXIT_OK, app

if TYPE_CHECKING:
    from infermeter.runs.compliance import AuditReport, ComplianceResult
    from infermeter.runs.request import RunRequest

Opt = typer.Option
console = Console(highlight=False)
err = Console(stderr=True, highlight=False)


@app.command("compliance")
def compliance_command(
    test: Annotated[str, typer.Argument(help="TEST01, TEST04 or TEST06.")],
    compliance_dir: Annotated[
        Path, Opt("--compliance-dir", "-c", help="The audit run's log folder.")
    ],
    output_dir: Annotated[
        Path,
        Opt("--output-dir", "-o", help="Where TESTxx/ is written (submission layout)."),
    ],
    results_dir: Annotated[
        Path | None,
        Opt(
            "--results-dir",
            "-r",
            help="Reference results: accuracy/ and performance/run_1/ (TEST01, TEST04).",
        ),
    ] = None,
    dtype: Annotated[
        str | None,
        Opt(help="Response dtype: byte, float32, int32, int64 (TEST01: byte)."),
    ] = None,
    scenario: Annotated[
        str | None, Opt(help="TEST06 scenario (default: the detail log's).")
    ] = None,
    eos_token_id: Annotated[int, Opt(help="TEST06 EOS token id.")] = 2,
    as_json: Annotated[bool, Opt("--json", help="Machine-readable output.")] = False,
) -> None:
    """Verify an audit run as MLPerf's run_verification.py scripts do: PASS or FAIL.

    Writes verify_accuracy.txt / verify_performance.txt and the audit run's
    logs under OUTPUT_DIR/TESTxx. Exit code 0 PASS, 3 FAIL. Examples:

      infermeter compliance TEST01 -r resnet50/Offline -c runs/audit -o resnet50/Offline

      infermeter compliance TEST06 -c audit_run -o out --dtype int32
    """
    from infermeter.runs.compliance import verify

    result = verify(
        test,
        compliance_dir=compliance_dir,
        output_dir=output_dir,
        results_dir=results_dir,
        dtype=dtype,
        scenario=scenario,
        eos_id=eos_token_id,
    )
    if as_json:
        typer.echo(json.dumps(result.to_dict(), indent=2))
    else:
        render_result(result)
    raise typer.Exit(EXIT_OK if result.passed else EXIT_INVALID)


def render_result(result: ComplianceResult) -> None:
    """Each check's output, then the verdict."""
    for name, check in result.checks.items():
        console.print(f"[bold]{result.test} {name} check[/]")
        for line in check.lines:
            if line:
                console.print(f"  {line}", markup=False)
        for note in check.notes:
            console.print(f"  note: {note}", markup=False)
    style = "bold green" if result.passed else "bold red"
    verdict = "PASS" if result.passed else "FAIL"
    console.print(
        f"[{style}]{result.test}: {verdict}[/] (infermeter compliance check, unverified)"
        f" — written to {result.folder}"
    )


def run_audit_command(
    test: str, request: RunRequest, audit_config: Path | None, *, json_output: bool
) -> AuditReport:
    """``run --audit``: every run with its progress and verdict, then the verification."""
    from infermeter.cli.render import print_run
    from infermeter.runs.compliance import run_audit
    from infermeter.runs.run import execute

    report = run_audit(
        test,
        request,
        run_one=lambda one: print_run(one, execute, json_output=False),
        audit_config=audit_config,
        on_step=lambda line: err.print(line, markup=False),
    )
    if json_output:
        typer.echo(json.dumps(report.result.to_dict(), indent=2))
    else:
        render_result(report.result)
        console.print(f"submission layout: {report.folder}", markup=False)
    return report
