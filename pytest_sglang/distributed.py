"""pytest-xdist: one host per worker, one deployment per config per host, one merged summary.

``pytest scenarios/ -n 2 --sglang-host a --sglang-host b``:

* tests are grouped by config (``xdist_group`` = config digest, less a named launcher: a
  config's runs on two releases stay together, to be compared) and scheduled with xdist's
  ``loadgroup`` unless ``--dist`` was given, so all tests of a config run on one worker and the
  config is deployed once;
* each worker leases one host for the session through the host lock (as many as the servers of
  its largest topology: :mod:`pytest_sglang.topology`): it tries the hosts in an order that
  starts at its own index and takes the free ones; short of hosts, it takes whichever free
  first within ``--sglang-lock-timeout`` (then goes on with what it has, or, with none, waits
  for its own), so no host is ever used by two workers and no worker waits for a host that a
  sibling keeps until the whole session ends;
* workers send their deployments, benchmarks, comparisons and report records to the controller,
  which writes the one ``--sglang-summary``, the Allure session files (sweep plots over every
  worker's tests) and ``--sglang-html``; each record names the host that ran it.

Simulator hosts declared with ``ssh = "local"`` are leased with a lock file on this machine; the
default ``local`` host is each worker's own embedded simulator.
"""

from __future__ import annotations

import fcntl
import os
import re
import tempfile
import time
from pathlib import Path
from typing import IO, Any

import pytest

from .config import ServerConfig
from .errors import SglangError
from .lifecycle.hosts import LOCAL_HOST
from .stash import SESSION_KEY

__all__ = ["worker_index"]

_LEASES: dict[str, IO[str]] = {}
#: How often a worker that found every host taken tries them all again.
_POLL_S = 1.0
_NOTES: list[str] = []


def worker_index(config: pytest.Config) -> int | None:
    """The xdist worker number (gw3 -> 3), None on the controller or without xdist."""
    worker = getattr(config, "workerinput", {}).get("workerid") or os.environ.get(
        "PYTEST_XDIST_WORKER"
    )
    if not worker:
        return None
    match = re.search(r"(\d+)$", worker)
    return int(match.group(1)) if match else 0


def _dist_given(config: pytest.Config) -> bool:
    args = config.invocation_params.args
    return any(a == "--dist" or a.startswith("--dist=") or a.startswith("-d") for a in args)


def pytest_configure(config: pytest.Config) -> None:
    """``loadgroup`` unless ``--dist`` was given, so each config's tests stay on one worker.

    Runs before xdist's own (trylast) configure creates the scheduler, and the option travels to
    the workers, which then suffix node ids with the group.
    """
    if getattr(config.option, "dist", "no") == "load" and not _dist_given(config):
        config.option.dist = "loadgroup"
    _cap_workers(config)


def _cap_workers(config: pytest.Config) -> None:
    """No more workers than hosts: a worker without a host could only wait for one, and hosts
    are held until the whole session ends. The default ``local`` host is per worker."""
    _NOTES.clear()
    hosts = list(dict.fromkeys(config.getoption("sglang_host") or []))
    workers = getattr(config.option, "numprocesses", None)
    if not hosts or hosts == [LOCAL_HOST] or not workers or workers <= len(hosts):
        return
    config.option.numprocesses = len(hosts)
    config.option.tx = list(config.option.tx or [])[: len(hosts)]
    _NOTES.append(
        f"sglang: {workers} workers asked for {len(hosts)} host(s): running {len(hosts)} "
        "worker(s), one per host"
    )


def pytest_report_header(config: pytest.Config) -> list[str]:
    return list(_NOTES)


def pytest_configure_node(node: Any) -> None:
    """Tell each worker that the controller schedules by group (workers re-parse argv only)."""
    node.workerinput["sglang_loadgroup"] = node.config.getoption("dist") == "loadgroup"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Group each config's tests; suffix node ids as xdist does for ``--dist loadgroup``, for
    the config groups and for any ``xdist_group`` mark a test carries itself (a module that
    shares an expensive fixture among its tests), which xdist 3.8 cannot suffix under pytest 9."""
    suffix = bool(getattr(config, "workerinput", {}).get("sglang_loadgroup"))
    for item in items:
        callspec = getattr(item, "callspec", None)
        value = callspec.params.get("sglang_server") if callspec is not None else None
        group = None
        if isinstance(value, ServerConfig):
            # a config's runs on the host's launchers (releases) share a worker: the later
            # release is gated against the earlier one's run in that worker's session
            group = f"sglang-{value.without_launcher().digest}"
            item.add_marker(pytest.mark.xdist_group(name=group))
        else:
            group = _own_group(item)
        if group and suffix and "@" not in item.nodeid:
            _suffix_nodeid(item, group)


def _own_group(item: pytest.Item) -> str | None:
    """The group of a test's own ``xdist_group`` marks, named as xdist names it."""
    names = {
        str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
        for mark in item.iter_markers("xdist_group")
    }
    return "_".join(sorted(names)) or None


def _suffix_nodeid(item: pytest.Item, group: str) -> None:
    """What xdist's worker does for loadgroup; pytest 9 keeps node ids in ``_id``, which
    xdist 3.8 does not update, so the group suffix is set here for both layouts."""
    new = f"{item.nodeid}@{group}"
    if hasattr(item, "_id"):
        # imported here: pytest 9 only (the ``_id`` layout), absent from the pytest 8 we support
        from _pytest.nodeid import coerce_node_id  # type: ignore[import-not-found]

        item._id = coerce_node_id(new)
    else:
        item._nodeid = new  # type: ignore[attr-defined]


def _lease_local(name: str, *, wait: bool) -> bool:
    """A lock file on this machine for a named local simulator host, per xdist run (two runs
    side by side each start their own simulators: they must not wait on each other's
    leases); False when taken (and not ``wait``). Released by the holder's exit at the
    latest."""
    root = Path(tempfile.gettempdir()) / "pytest-sglang-leases"
    root.mkdir(exist_ok=True)
    run = re.sub(r"[^A-Za-z0-9]", "", os.environ.get("PYTEST_XDIST_TESTRUNUID", ""))
    handle = (root / f"{run or 'run'}-{name}.lock").open("a")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except OSError:
        handle.close()
        return False
    _LEASES[name] = handle
    return True


def _try_lease(sglang: Any, name: str, *, wait: bool) -> bool:
    host = sglang.host(name)
    if host.spec.kind == "local":
        return name == LOCAL_HOST or _lease_local(name, wait=wait)
    try:
        host.lock(timeout=None if wait else 0.0)
    except SglangError:
        if wait:
            raise
        return False
    return True


def _say(sglang: Any, message: str) -> None:
    if sglang.progress is not None:
        sglang.progress(message)


def _needs_host(session: pytest.Session) -> bool:
    return any("sglang_server" in getattr(i, "fixturenames", ()) for i in session.items)


def _hosts_per_test(session: pytest.Session) -> int:
    """The most hosts one of this worker's configs needs at once: 1, or the nodes of every
    replica of its largest topology (all on hosts this worker holds)."""
    needed = 1
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        value = callspec.params.get("sglang_server") if callspec is not None else None
        if isinstance(value, ServerConfig) and value.topology is not None:
            needed = max(needed, value.topology.hosts_needed)
    return needed


def _lease_hosts(sglang: Any, order: list[str], count: int, index: int) -> list[str]:
    """``count`` hosts for this worker: the free ones, starting at its own place in the order;
    short of that, whichever free first within ``--sglang-lock-timeout`` (a sibling worker
    keeps its hosts until the whole session ends, so waiting for given ones could wait forever),
    then what it has: a topology needing more fails with the one line naming the hosts. With
    none at all, it waits for its own."""
    leased: list[str] = []
    for name in order:
        if len(leased) < count and _try_lease(sglang, name, wait=False):
            leased.append(name)
    if len(leased) < count:
        _say(sglang, f"[sglang] worker gw{index}: hosts taken; waiting for one to free")
        deadline = time.monotonic() + float(getattr(sglang, "lock_timeout", 300.0))
        while len(leased) < count and time.monotonic() < deadline:
            time.sleep(_POLL_S)
            for name in order:
                free = name not in leased and len(leased) < count
                if free and _try_lease(sglang, name, wait=False):
                    leased.append(name)
    if not leased:
        _try_lease(sglang, order[0], wait=True)
        leased = [order[0]]
    return leased


def pytest_collection_finish(session: pytest.Session) -> None:
    """On a worker with deployments to do, lease its hosts for the whole session: one, or as
    many as its largest topology needs."""
    index = worker_index(session.config)
    if index is None or not _needs_host(session):
        return
    sglang = session.config.stash[SESSION_KEY]
    names = list(sglang.host_names)
    if len(names) < 2:
        return
    count = min(_hosts_per_test(session), len(names))
    start = index * count
    order = [names[(start + k) % len(names)] for k in range(len(names))]
    try:
        leased = _lease_hosts(sglang, order, count, index)
    except SglangError:
        return  # the tests of this worker fail with the lock error when they ask for the host
    sglang.host_names = leased
    _say(sglang, f"[sglang] worker gw{index} leased host {', '.join(leased)}")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Workers hand their records to the controller (after the main plugin restored): each
    plugin adds its own (``pytest_sglang_worker_output``)."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is None:
        return
    session.config.hook.pytest_sglang_worker_output(config=session.config, output=workeroutput)
    for handle in _LEASES.values():
        handle.close()
    _LEASES.clear()


def pytest_testnodedown(node: Any, error: Any) -> None:
    """The controller merges what each worker did into its own results (each plugin its own:
    ``pytest_sglang_merge_worker_output``)."""
    outputs = getattr(node, "workeroutput", {})
    node.config.hook.pytest_sglang_merge_worker_output(config=node.config, output=outputs)
