"""No import circles between infermeter's modules, one named exception.

A circle means none of its modules can be read, tested or replaced alone. The
graph is grimp's (the library under import-linter), imports under
``TYPE_CHECKING`` and inside functions included: a circle hidden that way is
still one. The one exception is the CLI's command registration (typer's
pattern): ``cli/main`` imports each command module, which imports ``cli/main``'s
``app`` to register its command on it; those imports of ``cli/main`` are named
below, and any other circle, in ``cli/`` too, fails.
"""

from __future__ import annotations

import re
from collections import deque

import grimp

CLI_MAIN = "infermeter.cli.main"
# ``from infermeter.cli import run as _run`` (and a noqa): imported only to register.
REGISTRATION = re.compile(r"from infermeter\.cli import (\w+) as _\1\b")

Graph = dict[str, set[str]]


def _graph() -> tuple[grimp.ImportGraph, Graph]:
    imports = grimp.build_graph("infermeter", cache_dir=None)
    edges = {
        m: set(imports.find_modules_directly_imported_by(m)) for m in imports.modules
    }
    return imports, edges


def _registrations(imports: grimp.ImportGraph) -> set[tuple[str, str]]:
    """``cli/main``'s imports of command modules made only so their commands register."""
    out = set()
    for module in imports.find_modules_directly_imported_by(CLI_MAIN):
        details = imports.get_import_details(importer=CLI_MAIN, imported=module)
        if details and all(REGISTRATION.match(d["line_contents"]) for d in details):
            out.add((CLI_MAIN, module))
    return out


def _circles(edges: Graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _loop(edges: Graph, component: list[str], start: str | None = None) -> str:
    """One shortest circle through ``start`` (the first module), as ``a -> b -> a``."""
    start, members = start or component[0], set(component)
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for child in sorted(edges[node] & members):
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return " -> ".join([*reversed(path), start])
            if child not in came_from:
                came_from[child] = node
                queue.append(child)
    raise AssertionError(f"no circle through {start}")


def _report(edges: Graph, circles: list[list[str]]) -> str:
    return "\n".join(
        f"import circle of {len(c)} modules: {_loop(edges, c)}" for c in circles
    )


def test_no_import_circle_but_the_cli_registration() -> None:
    imports, edges = _graph()
    registrations = _registrations(imports)
    for importer, imported in registrations:
        edges[importer].discard(imported)
    circles = _circles(edges)
    assert not circles, "\n" + _report(edges, circles)


def test_the_cli_registration_circle_holds_only_main_and_its_commands() -> None:
    """The exception stays narrow: no other module (a CLI helper either) joins it."""
    imports, edges = _graph()
    registrations = _registrations(imports)
    assert registrations, "cli/main registers no command: drop the exception"
    allowed = {CLI_MAIN} | {imported for _, imported in registrations}
    circles = _circles(edges)
    joined = [(c, sorted(set(c) - allowed)) for c in circles if not set(c) <= allowed]
    assert not joined, "\n" + "\n".join(
        f"{', '.join(extra)} joined an import circle: {_loop(edges, c, extra[0])}"
        for c, extra in joined
    )
    assert [CLI_MAIN in c for c in circles] == [True]


def test_a_circle_is_found_and_named() -> None:
    """The finder itself: a planted circle is reported with its path."""
    edges: Graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    circles = _circles(edges)
    assert circles == [["a", "b", "c"]]
    assert _loop(edges, circles[0]) == "a -> b -> c -> a"
