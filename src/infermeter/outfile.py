"""Writing an output file the user named: whole or not at all, one-line errors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from infermeter.errors import PathError


@contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A temporary sibling of ``path`` to write, renamed over ``path`` once written,
    so a failed write leaves no half file under the real name. The parent folder
    is created; a path that cannot be written is a one-line ``PathError``, not an
    internal error."""
    tmp = path.with_name(path.name + ".part")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        yield tmp
        tmp.replace(path)
    except OSError as exc:
        raise PathError(
            f"Cannot write {str(path)!r}: {exc.strerror or exc}; choose a writable path."
        ) from None
    finally:
        with suppress(OSError):  # a failed write's leftovers; gone after the rename
            tmp.unlink(missing_ok=True)


def writable_folder(folder: Path, flag: str) -> None:
    """Create ``folder`` and prove a file can be written there, before any load is
    sent: a bad ``flag`` path is a one-line usage error, not a lost run."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / ".infermeter-write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise PathError(
            f"{flag} {str(folder)!r} cannot be written ({exc.strerror or exc}); "
            "pass a folder you can write to"
        ) from None
