"""Suite-wide: temporary folders in memory, each test process's results store
its own, and under ``--dist loadfile`` each test file whole on one xdist worker.

``make test`` runs the suite on every core (``pytest -n auto --dist loadfile``).
A file's module fixtures (mock servers, a world of run folders) are built once,
on the worker that runs the file. The files of one ``SHARED_WORKER`` group run
on one worker, one after the other.
"""

from __future__ import annotations

import os

# Before numpy loads: OpenBLAS would start a thread per core for each matrix
# product (the perfmodel's fits: 800 x 130), and with the cores taken by the
# other xdist workers its threads spin for the time they wait; one thread per
# worker cut tests/unit/perfmodel/test_validation.py from 17.7 to 7.0 CPU-s.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Tests make and remove thousands of folders and sqlite files: on a disk busy
# with other work each cost milliseconds (a fuzz test took 116 s, 37 s without
# its folder per example). In memory when /dev/shm has room (a container's
# default 64 MiB has not); ``--basetemp DIR`` keeps them on disk, and kept.
MEMORY = Path("/dev/shm")
MEMORY_FREE_BYTES = 4 * 2**30
_MADE = pytest.StashKey[Path]()


@pytest.hookimpl(tryfirst=True)  # before pytest reads --basetemp
def pytest_configure(config: pytest.Config) -> None:
    if config.option.basetemp or hasattr(config, "workerinput"):
        return  # given, or an xdist worker's (a folder in its controller's)
    try:
        if shutil.disk_usage(MEMORY).free < MEMORY_FREE_BYTES:
            return
    except OSError:
        return
    made = Path(tempfile.mkdtemp(prefix="infermeter-tests-", dir=MEMORY))
    config.option.basetemp = str(made)
    config.stash[_MADE] = made


def pytest_unconfigure(config: pytest.Config) -> None:
    made = config.stash.get(_MADE, None)
    if made is not None:  # memory, not disk: nothing of it outlives the session
        shutil.rmtree(made, ignore_errors=True)


# One local Ray cluster at a time: ``--ray auto`` joins whichever one runs.
SHARED_WORKER = {
    "tests/e2e/test_examples.py": "ray",
    "tests/integration/test_ray_backend.py": "ray",
}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile``, with the files of a ``SHARED_WORKER`` group as one file."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class GroupedFiles(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = super()._split_scope(nodeid)
            return SHARED_WORKER.get(path, path)

    return GroupedFiles(config, log)


@pytest.fixture(autouse=True, scope="session")
def _private_results_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A run without ``--store`` (in this process or a child) indexes into a store
    of this test process, never the user's (``~/.local/share/infermeter``) nor
    the other worker's."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("INFERMETER_HOME", str(tmp_path_factory.mktemp("home")))
        yield


@pytest.fixture(autouse=True, scope="session")
def _cli_runner_builds_the_command_once() -> Iterator[None]:
    """``CliRunner().invoke(app, ...)`` gets the command ``main()`` runs.

    typer's runner rebuilds the click command on every call (0.2-0.5 CPU-s of
    annotation reading), and hundreds of tests call it. ``build_command`` is the
    one the console script runs, built once per process: examples last, every
    number option finite.
    """
    import typer.testing

    original = typer.testing._get_command

    def command_of(app: Any) -> Any:
        from infermeter.cli.main import app as ours
        from infermeter.cli.main import build_command

        return build_command() if app is ours else original(app)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(typer.testing, "_get_command", command_of)
        yield
