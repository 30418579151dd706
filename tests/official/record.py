"""Record the official wheel's schedules for the cases of test_schedule_official.

``python -m tests.official.record`` rewrites tests/data/official_schedules.json,
used when the wheel is not installed. Stores the loaded set, the sample count
and a sha256 of the sample-index sequence, and the first 64 Server offsets.
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.unit.loadgen.test_schedule_official import CASES, RECORDED, ROOT, digest


def main() -> None:
    recorded = {}
    for name, case in sorted(CASES.items()):
        out = subprocess.run(
            [sys.executable, "-m", "tests.official.probe", json.dumps(case)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        result = json.loads(out.stdout)
        entry = {
            "loaded_qsl_set": result["loaded_qsl_set"],
            "sample_count": len(result["sample_indices"]),
            "sample_indices_sha256": digest(result["sample_indices"]),
        }
        if case["scenario"] == "Server" and case.get("mode") is None:
            entry["scheduled_ns"] = result["scheduled_ns"][:64]
        recorded[name] = entry
    RECORDED.write_text(json.dumps(recorded, indent=1) + "\n")


if __name__ == "__main__":
    main()
