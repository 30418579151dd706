"""Suite-wide: each test process keeps its results store to itself, and each test
file runs whole on one xdist worker.

``make test`` runs the suite on every core (``pytest -n auto --dist loadgroup``).
A file's module fixtures (mock servers, a world of run folders) are built once,
on the worker that runs the file; a file that names an ``xdist_group`` shares a
worker, one after the other, with the files that name the same group (Ray: one
local cluster at a time).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups into node ids
def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> None:
    if not config.pluginmanager.hasplugin("xdist"):
        return  # one process: nothing to group (and no xdist_group marker)
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


@pytest.fixture(autouse=True, scope="session")
def _private_results_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A run without ``--store`` (in this process or a child) indexes into a store
    of this test process, never the user's (``~/.local/share/infermeter``) nor
    the other worker's."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("INFERMETER_HOME", str(tmp_path_factory.mktemp("home")))
        yield
