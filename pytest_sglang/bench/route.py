"""The route a benchmark's load takes to the server, and one round run along it with its stall
check.

Why a choice: on an SSH host every request through one paramiko port forward measures the
forward (30-46k tok/s where the server gave 164-180k to a client on its network). Per host,
``bench_from`` in the inventory says where the load generator runs:

- ``"host"``: on the GPU host, with the host's own Python (the launcher's), over SSH
  (:mod:`.remote`, :mod:`.agent`); the timings are taken next to the server;
- ``"direct"``: here, connecting to the server's own address (it must listen on one that is
  reachable from here: not 127.0.0.1);
- ``"forward"``: here, through the SSH port forward (always works; measures the link too).

Unset, the best that works is taken, checked at the first benchmark on the host and said once:
the host when its Python has aiohttp, else direct when the server answers there, else the
forward. A path that was asked for and cannot work is a one-line error naming the cause.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import socket
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, SglangError, TransportError
from ..lifecycle.launch_plan import LOCAL_ADDRESSES
from .loadgen import FlushFailed, ProgressSink, RawRun, finish, generate
from .metrics import BenchResult, RequestRecord, compute_metrics
from .remote import NoAiohttp, run_on_host
from .stalls import Evidence, disturbance
from .workload import Workload

if TYPE_CHECKING:
    from ..lifecycle.deployer import Deployer
    from ..lifecycle.deployment import Deployment

__all__ = ["Round", "Route", "bench_from_by_host", "route_for", "route_of", "run_round"]

#: How long the reachability check of ``direct`` waits for a TCP connect.
CONNECT_CHECK_S = 2.0
_AIOHTTP_CHECK = "import sys, aiohttp; print(sys.version_info >= (3, 9))"


@dataclass(frozen=True)
class Route:
    """The path of one host's benchmarks: ``kind`` (host, direct or forward), the URL the
    generator sends to (as seen from where it runs) and a short description."""

    kind: str
    base_url: str
    detail: str


@dataclass
class Round:
    """One measured round: its figures, where the load came from, and why it does not measure
    the server ("" when nothing disturbed it)."""

    result: BenchResult
    bench_from: str
    disturbed: str = ""
    #: the round's requests as measured (per-request SLO figures are computed from them)
    records: list[RequestRecord] = field(default_factory=list)


_ROUTES: weakref.WeakKeyDictionary[Deployer, dict[tuple[str, int], Route]] = (
    weakref.WeakKeyDictionary()
)


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _direct_address(deployment: Deployment, deployer: Deployer) -> tuple[str | None, str]:
    """Where this machine reaches the server, or None and why it cannot."""
    plan = deployment.plan
    assert plan is not None
    bound = plan.deployed.host or "127.0.0.1"
    if bound in ("127.0.0.1", "localhost", "::1"):
        return None, (
            f"the server binds {bound} (its --host), which is the host's own loopback; give the "
            'config host="0.0.0.0" (or the host\'s address)'
        )
    address = deployer.spec.hostname if bound in LOCAL_ADDRESSES else bound
    try:
        with socket.create_connection((address, plan.port), timeout=CONNECT_CHECK_S):
            pass
    except OSError as exc:
        return None, f"{address}:{plan.port} does not answer from here ({exc.strerror or exc})"
    return address, ""


def _host_python(deployer: Deployer, where: str) -> str:
    """ "" when the host's Python can run the generator, else why not."""
    words = deployer.launcher.python_words()
    try:
        result = deployer.transport.run(
            " ".join(["%s"] * len(words)) + " -c %s", *words, _AIOHTTP_CHECK, timeout=60
        )
    except TransportError as exc:
        return f"cannot run its Python ({type(exc).__name__})"
    if result.rc != 0 or result.stdout.strip() != "True":
        last = (result.stderr.strip().splitlines() or [result.stdout.strip() or "no output"])[-1]
        return f"its Python {shlex.quote(words[-1])} cannot run the load generator ({last})"
    return ""


def route_for(deployment: Deployment) -> Route:
    """The host's path, chosen at its first benchmark (then kept for the session)."""
    deployer = deployment.deployer
    plan = deployment.plan
    if deployer is None or plan is None or deployer.spec.kind == "local":
        return Route("direct", deployment.base_url, "this machine")
    key = (plan.listen_host, plan.port)
    routes = _ROUTES.setdefault(deployer, {})
    if key not in routes:
        routes[key] = _choose(deployment, deployer)
    return routes[key]


def route_of(deployment: Deployment, kind: str) -> Route:
    """The route of ``kind`` (host, direct or forward) to the deployment's server, checked:
    a ConfigError says why it cannot work (to compare the paths, as benchmarks/bench_paths.py
    does)."""
    deployer = deployment.deployer
    if deployer is None or deployment.plan is None or deployer.spec.kind == "local":
        return route_for(deployment)
    return _choose(deployment, deployer, kind)


def _choose(deployment: Deployment, deployer: Deployer, asked: str | None = None) -> Route:
    spec = deployer.spec
    plan = deployment.plan
    assert plan is not None
    asked = spec.bench_from if asked is None else asked
    name = spec.name
    host_url = _url(plan.listen_host, plan.port)
    forward = Route("forward", deployment.base_url, "through the SSH port forward")
    fallback = ""
    if asked == "forward":
        return forward
    if asked in ("", "host"):
        why = _host_python(deployer, name)
        if not why:
            python = deployer.launcher.python_words()[-1]
            route = Route("host", host_url, f"the generator runs on {name} with {python}")
            deployer.say(f"[sglang] {name}: benchmark load from the host ({route.detail})")
            return route
        if asked == "host":
            raise ConfigError(
                f'host {name!r}: bench_from = "host" cannot work: {why}; install aiohttp '
                'there, or set bench_from = "direct" or "forward"'
            )
        fallback = why
    if asked in ("", "direct"):
        address, why = _direct_address(deployment, deployer)
        if address is not None:
            route = Route("direct", _url(address, plan.port), f"this machine to {address}")
            if not asked:
                deployer.say(
                    f"[sglang] {name}: benchmark load from this machine, direct to {address} "
                    f"(not from the host: {fallback})"
                )
            return route
        if asked == "direct":
            raise ConfigError(
                f'host {name!r}: bench_from = "direct" cannot work: {why}; or set bench_from = '
                '"host" or "forward"'
            )
        fallback = f"{fallback}; not direct: {why}"
    deployer.say(
        f"[sglang] {name}: benchmark load through the SSH port forward, which measures the link "
        f"too (not from the host: {fallback})"
    )
    return forward


def run_round(
    deployment: Deployment,
    workload: Workload,
    *,
    model: str,
    route: Route | None = None,
    progress: ProgressSink | None = None,
    on_record: Callable[[RequestRecord], bool | None] | None = None,
) -> Round:
    """One round of ``workload`` from the host's path (or ``route``), checked for stalls;
    ``progress`` hears how far it got; ``on_record`` sees each request as it finishes and
    stops the round by returning True (:func:`~.loadgen.generate`)."""
    route = route or route_for(deployment)
    deployer = deployment.deployer
    transport = deployer.transport if deployer is not None else None
    watch = transport.watch_link() if transport is not None else None
    if watch is None and transport is not None and route.kind != "direct":
        # not connected (dropped since the last round): reconnect before the measured window,
        # so that a reconnect inside it is one that the round itself suffered
        with contextlib.suppress(TransportError):
            transport.run("true", timeout=30)
        watch = transport.watch_link()
    connects = transport.connects if transport is not None else 0
    link_began = time.perf_counter()
    raw: RawRun | None
    lost, lost_at, lags = "", 0.0, []
    if route.kind == "host":
        assert deployer is not None and transport is not None
        try:
            run = run_on_host(
                transport,
                deployer.launcher.python_words(),
                route.base_url,
                workload,
                model=model,
                where=f"host {deployer.spec.name!r}",
                on_record=on_record,
                progress=progress,
                api_key=deployment.api_key,
            )
        except NoAiohttp as exc:
            raise ConfigError(str(exc)) from None
        finally:
            link = watch.stop() if watch is not None else []
        raw, lags, lost, lost_at = run.raw, run.lags, run.lost, run.lost_at
    else:
        try:
            raw = asyncio.run(
                generate(
                    route.base_url,
                    workload,
                    model=model,
                    progress=progress,
                    on_record=on_record,
                    api_key=deployment.api_key,
                )
            )
        except FlushFailed as exc:
            raise SglangError(f"{deployment.config_id} {workload.name}: {exc}") from None
        finally:
            link = watch.stop() if watch is not None else []
        link_began = raw.began  # the same clock here: the link's times count from the run's start
    evidence = Evidence(
        records=raw.records if raw is not None else [],
        began=raw.began if raw is not None else 0.0,
        link=link,
        link_began=link_began,
        link_watched=watch is not None,
        lags=lags,
        reconnects=(transport.connects - connects) if transport is not None else 0,
        lost=lost,
        lost_at=lost_at,
    )
    result = finish(raw) if raw is not None else compute_metrics([], 0.0)
    return Round(result, route.kind, disturbance(evidence), list(evidence.records))


def bench_from_by_host(rows: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Where each host's benchmark load came from (``bench_from``: host, direct or forward), by
    host in run order, from benchmark rows (the summary's, the terminal's); the last row's path
    where a host's changed."""
    return {str(r["host"]): str(r["bench_from"]) for r in rows if r.get("bench_from")}
