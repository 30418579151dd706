"""Record the official wheel's log skeletons for test_logs_official (used without the wheel).

``python -m tests.official.record_logs`` rewrites tests/data/official_log_skeletons.json.
"""

from __future__ import annotations

import json

from tests.unit.loadgen.test_logs_official import CASES, RECORDED, official


def main() -> None:
    RECORDED.write_text(
        json.dumps({name: official(name) for name in sorted(CASES)}, indent=1) + "\n"
    )


if __name__ == "__main__":
    main()
