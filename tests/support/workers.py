"""The run under pytest-xdist: which tests must share a worker, and the embedded clusters every
worker started (so the run can prove it leaves none running).

Each worker is its own process with its own embedded cluster (``tests/conftest.py``), so tests
on different workers share no database, port or file. What they could share is a fixture wider
than a test: a module- or session-scoped fixture defined below the root ``conftest.py`` (a
server, a browser, replayed datasets) is set up once per worker that runs a test using it. Such
tests are put in one ``xdist_group`` (run with ``--dist loadgroup``), named after where the
widest such fixture is defined, so the fixture is set up once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

ROOT_BASEIDS = frozenset({"", "tests"})
"""Fixtures of plugins and of the root conftest: per-worker by design (one cluster each)."""

SCOPE_WIDTH = {"module": 1, "package": 2, "session": 3}


def shared_fixture_group(item: pytest.Item) -> str | None:
    """The group of the widest module-or-wider fixture ``item`` uses that is not per-worker by
    design, or None."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    widest: tuple[int, str] | None = None
    for definitions in info.name2fixturedefs.values():
        definition = definitions[-1]
        width = SCOPE_WIDTH.get(definition.scope, 0)
        if width == 0 or definition.baseid in ROOT_BASEIDS:
            continue
        if widest is None or width > widest[0]:
            widest = (width, definition.baseid)
    return None if widest is None else widest[1]


def group_shared_fixtures(items: list[pytest.Item]) -> None:
    for item in items:
        if any(True for _ in item.iter_markers("xdist_group")):
            continue
        group = shared_fixture_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


def group_names(item: pytest.Item) -> list[str]:
    """The ``xdist_group`` names of ``item``, as xdist reads them."""
    return sorted(
        {
            str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
            for mark in item.iter_markers("xdist_group")
        }
    )


def name_groups(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a ``--dist loadgroup`` worker: make sure every grouped test's id ends in ``@group``,
    which is how the controller learns the groups. xdist appends it itself where pytest keeps
    the id in ``_nodeid``; pytest 9.2 keeps it in a structured ``_id``, which xdist 3.8 does
    not set, so it is set here the same way (a no-op where xdist already did it)."""
    if not getattr(config.option, "loadgroup", False):
        return
    from _pytest.nodeid import NodeId

    for item in items:
        names = group_names(item)
        suffix = "@" + "_".join(names)
        if not names or item.nodeid.endswith(suffix):
            continue
        if hasattr(item, "_id"):
            item._id = NodeId.parse(item.nodeid + suffix)


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def report_to_controller(config: pytest.Config, data_dirs: list[Path]) -> None:
    """On a worker: hand the data directories it started clusters in to the controller."""
    output: dict[str, Any] = config.workeroutput  # type: ignore[attr-defined]
    output["cluster_data_dirs"] = [str(path) for path in data_dirs]


def reported_by(node: Any) -> list[Path]:
    """On the controller: the data directories a finished worker reported."""
    output: dict[str, Any] = getattr(node, "workeroutput", {}) or {}
    return [Path(path) for path in output.get("cluster_data_dirs", [])]
