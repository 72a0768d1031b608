"""The report's session object: what each test deployed and measured, and the files at the end.

The pytest hooks in :mod:`.pytest_plugin` only call into :class:`ReportSession`. During a test
it sets the Allure parameters, attaches what was deployed and measured, and keeps a
:class:`~.records.BenchRecord` per benchmark; at the end of the session it finds the sweeps,
draws their plots once, and writes the Allure session files and the HTML summary from them.
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import ServerConfig
from ..errors import SglangError
from ..quality.verdict import display_verdict, quality_holds, quality_marks
from ..secrets import Redactor
from . import allure_output
from .environment import HostFacts, environment_properties, host_facts
from .html_summary import render_summary, write_summary
from .plots import PlotsUnavailable, plot_sweep
from .records import BenchRecord, load_paths
from .sweeps import Sweep, find_sweeps
from .tables import comparison_table, html_document, quality_table, sweep_table
from .tuning import DEFAULT_OBJECTIVE, Verdict, titles, tuning_html, tuning_verdicts
from .tuning_plot import plot_tuning

if TYPE_CHECKING:
    from ..lifecycle.deployment import Deployment

__all__ = ["ReportSession", "item_config"]

Comparisons = Callable[[], list[dict[str, Any]]]
#: A report must never fail a test: these are what building an attachment can raise.
_REPORT_ERRORS = (SglangError, OSError, ValueError, TypeError, KeyError)


def item_config(params: Mapping[str, Any]) -> ServerConfig | None:
    value = params.get("sglang_server")
    return value if isinstance(value, ServerConfig) else None


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, ServerConfig):
        return value.id
    return str(value)


class _SessionRedaction:
    """Blanks out the secrets the session's redactor knows (it learned every deployment's
    launch plan when it was brought up); text passes unchanged before there is a session."""

    def __init__(self, session_redactor: Callable[[], Redactor | None]) -> None:
        self._session = session_redactor

    def __call__(self, text: str) -> str:
        redactor = self._session()
        return redactor.redact(text) if redactor is not None else text


class ReportSession:
    """Collects per-test report data; writes the session's Allure files and HTML summary."""

    def __init__(
        self,
        *,
        results_dir: Path | None,
        html_path: Path | None,
        host: str,
        comparisons: Comparisons,
        session_redactor: Callable[[], Redactor | None] = lambda: None,
        quality: Comparisons = list,
    ) -> None:
        self.results_dir = results_dir
        #: what the tuning verdict ranks by (``--sglang-objective``)
        self.objective = DEFAULT_OBJECTIVE
        self.html_path = html_path
        self.host = host
        self.comparisons = comparisons
        self.quality = quality
        self.redact = _SessionRedaction(session_redactor)
        self.records: list[BenchRecord] = []
        self.facts: dict[str, HostFacts] = {}
        self.models: list[str] = []
        self.notes: list[str] = []
        self.started_ms = int(time.time() * 1000)
        self._call_start_ms = 0
        self._bench_seen = 0
        self._attached_comparisons: set[str] = set()

    @property
    def allure(self) -> bool:
        return self.results_dir is not None

    def _note(self, line: str) -> None:
        if line not in self.notes:
            self.notes.append(line)

    # -- per test ----------------------------------------------------------------------------

    def setup(self, params: Mapping[str, Any]) -> None:
        """Before the fixtures: parameters from the config (the deployment may still fail)."""
        config = item_config(params)
        if not self.allure:
            return
        import allure

        for name, value in params.items():
            if isinstance(value, ServerConfig):
                # allure-pytest would show repr(config), which contains the env values
                allure.dynamic.parameter(name, value.id)
        if config is not None:
            allure_output.set_parameters(config, self.host, self.redact)

    def before_call(self, bench_count: int) -> None:
        self._call_start_ms = int(time.time() * 1000)
        self._bench_seen = bench_count

    def after_call(
        self,
        nodeid: str,
        params: Mapping[str, Any],
        deployment: Deployment | None,
        bench: list[dict[str, Any]],
    ) -> None:
        """After the test body: attach the deployment and the new benchmark results."""
        stop_ms = int(time.time() * 1000)
        new = bench[self._bench_seen :]
        self._bench_seen = len(bench)
        if deployment is None:
            return
        try:
            self._deployment_seen(deployment)
            if self.allure:
                allure_output.attach_deployment(deployment, self.redact)
            for info in new:
                self._record(nodeid, params, deployment, info, stop_ms)
                if self.allure:
                    allure_output.attach_bench(info, self.redact)
        except _REPORT_ERRORS as exc:
            self._note(f"report: cannot attach the deployment of {nodeid}: {exc}")

    def _deployment_seen(self, deployment: Deployment) -> None:
        if deployment.config.model_path not in self.models:
            self.models.append(deployment.config.model_path)
        if deployment.host not in self.facts:
            self.facts[deployment.host] = host_facts(deployment)

    def _record(
        self,
        nodeid: str,
        params: Mapping[str, Any],
        deployment: Deployment,
        info: dict[str, Any],
        stop_ms: int,
    ) -> None:
        self.records.append(
            BenchRecord(
                nodeid=nodeid,
                test=nodeid.split("[", 1)[0],
                host=deployment.host,
                config_id=deployment.config_id,
                tuned={k: _plain(v) for k, v in deployment.config.tuned().items()},
                params={
                    k: _plain(v)
                    for k, v in params.items()
                    if not isinstance(v, ServerConfig) and k != "sglang_server"
                },
                info=info,
                start_ms=self._call_start_ms,
                stop_ms=stop_ms,
            )
        )

    def teardown(self, nodeid: str) -> None:
        """Attach this test's baseline comparisons, when the baselines have made them by now."""
        if not self.allure or nodeid in self._attached_comparisons:
            return
        rows = [r for r in self.comparisons() if r.get("nodeid") == nodeid]
        if rows:
            self._attached_comparisons.add(nodeid)
            allure_output.attach_comparisons([self._redacted_row(r) for r in rows])

    def _redacted_row(self, row: Mapping[str, Any]) -> dict[str, Any]:
        return {k: self.redact(v) if isinstance(v, str) else v for k, v in row.items()}

    # -- session end -------------------------------------------------------------------------

    def _plots(self, sweeps: list[Sweep]) -> dict[str, bytes]:
        plots: dict[str, bytes] = {}
        for sweep in sweeps:
            try:
                plots[sweep.slug] = plot_sweep(sweep)
            except PlotsUnavailable as exc:
                self._note(str(exc))
                break
        return plots

    def finish(self, deployments: list[dict[str, Any]]) -> None:
        """Write the Allure session files and the HTML summary (whichever were asked for)."""
        if not self.allure and self.html_path is None:
            return
        comparisons = [self._redacted_row(r) for r in self.comparisons()]
        quality = self._quality_rows()
        sweeps = find_sweeps(self.records)
        plots = self._plots(sweeps) if sweeps else {}
        tuning = self._tuning()
        facts = list(self.facts.values())
        if self.results_dir is not None:
            environment = environment_properties(facts, self.models, load_paths(self.records))
            allure_output.write_session_files(
                self.results_dir, environment=environment, records=self.records
            )
            if sweeps or comparisons or quality or tuning:
                self._write_summary_result(sweeps, plots, comparisons, tuning, quality)
        if self.html_path is not None:
            page = render_summary(
                facts=facts,
                deployments=deployments,
                sweeps=sweeps,
                plots=plots,
                comparisons=comparisons,
                records=self.records,
                notes=self.notes,
                quality=quality,
                tuning=tuning,
            )
            write_summary(self.html_path, self.redact(page))

    def _quality_rows(self) -> list[dict[str, Any]]:
        """The quality evals with each config's best output throughput and its mark."""
        rows = [self._redacted_row(r) for r in self.quality()]
        bench = [{"config_id": r.config_id, **r.info} for r in self.records]
        marks = quality_marks(rows, bench)
        for row in rows:
            speeds = [
                float(b["output_throughput"])
                for b in bench
                if b["config_id"] == row.get("config_id")
                and isinstance(b.get("output_throughput"), (int, float))
            ]
            row["output_throughput"] = max(speeds) if speeds else None
            row["verdict"] = display_verdict(row, marks)
        return rows

    def _tuning(self) -> list[tuple[Verdict, bytes | None]]:
        """The tuning verdicts of the session's records, each with its plot when it has one."""
        infos = [r.info for r in self.records]
        out: list[tuple[Verdict, bytes | None]] = []
        holds = quality_holds(self.quality())
        for verdict in tuning_verdicts(infos, self.objective, holds):
            png = None
            if verdict.objective == "max-rate":
                try:
                    png = plot_tuning(verdict, infos)
                except PlotsUnavailable as exc:
                    self._note(str(exc))
            out.append((verdict, png))
        return out

    def _write_summary_result(
        self,
        sweeps: list[Sweep],
        plots: dict[str, bytes],
        comparisons: list[dict[str, Any]],
        tuning: list[tuple[Verdict, bytes | None]],
        quality: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        assert self.results_dir is not None
        attachments: list[tuple[str, bytes | str, str, str]] = []
        if tuning:
            body = tuning_html([v for v, _ in tuning])
            page = html_document("tuning verdict", body)
            attachments.append(("tuning verdict", self.redact(page), "text/html", "html"))
            for (_verdict, png), title in zip(tuning, titles([v for v, _ in tuning])):
                if png is not None:  # named by its workload's digest where two share a name
                    name = f"plot: tuning {title}"
                    attachments.append((name, png, "image/png", "png"))
        for sweep in sweeps:
            png = plots.get(sweep.slug)
            if png is not None:
                attachments.append((f"plot: {sweep.title}", png, "image/png", "png"))
            heading = f"<h1>{html.escape(sweep.title)}</h1>"
            page = html_document(sweep.title, heading + sweep_table(sweep))
            attachments.append((f"table: {sweep.title}", self.redact(page), "text/html", "html"))
        if comparisons:
            page = html_document("baseline comparison", comparison_table(comparisons))
            attachments.append(("baseline comparison", page, "text/html", "html"))
        if quality:
            page = html_document("quality", quality_table(quality))
            attachments.append(("quality next to speed", page, "text/html", "html"))
        regressed = any(str(r.get("verdict", "")).lower() == "regression" for r in comparisons)
        lines = [v.sentence for v, _ in tuning]
        lines += [f"{s.title}: {len(s.points)} points" for s in sweeps]
        lines += [f"{len(comparisons)} baseline comparison(s)"] if comparisons else []
        lines += self.notes
        allure_output.write_summary_result(
            self.results_dir,
            attachments=attachments,
            description="\n\n".join(lines),
            failed=regressed,
            start_ms=self.started_ms,
        )
