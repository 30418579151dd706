"""``python -m infermeter``."""

from __future__ import annotations

from infermeter.cli.main import main

if __name__ == "__main__":
    main()
