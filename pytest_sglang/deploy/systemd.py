"""Deploy a launch plan as a systemd unit over the host's transport, and restore the host after.

Before its first change to any file, the deployer records it in the host's backup
(:mod:`.backup`, ``/var/lib/pytest-sglang/<service>/``) together with the service's prior
ActiveState and UnitFileState, and moves the unit's drop-ins aside (they could override
ExecStart or Environment). ``restore()`` stops the session's server, puts every file and the
drop-ins back byte-identical, reloads systemd and starts the service again only if it was
running.
"""

from __future__ import annotations

import json
import signal
from typing import TYPE_CHECKING, Any

from ..errors import DeployError, JournalError, RestoreError, TransportError
from ..launch_plan import LOCAL_ADDRESSES
from .backup import HostBackup
from .base import Deployer, DeployerSettings, JournalEntry, ServiceState
from .drain import drain, in_flight, serving_port
from .plan import render_diff
from .unit import EXIT_MARKER, render_env_file, render_unit

if TYPE_CHECKING:
    from ..hosts import HostSpec
    from ..launch_plan import LaunchPlan
    from ..transport.base import CommandResult, Transport

__all__ = ["SystemdDeployer"]

UNIT_DIR = "/etc/systemd/system"
ENV_DIR = "/etc/pytest-sglang"
BACKUP_ROOT = "/var/lib/pytest-sglang"
_EXEC_CODES = {"0": "", "1": "exited", "2": "killed", "3": "dumped"}
_SHOW_PROPS = "ActiveState,SubState,MainPID,ExecMainCode,ExecMainStatus,NRestarts,Result"
_RUNNING = ("active", "activating", "reloading")


class SystemdDeployer(Deployer):
    """Runs the server as ``spec.service`` (unit in /etc/systemd/system, env file 0600)."""

    def __init__(
        self, spec: HostSpec, transport: Transport, settings: DeployerSettings | None = None
    ) -> None:
        super().__init__(spec, transport, settings)
        if not spec.service:
            raise DeployError(f"host {spec.name!r}: no 'service' set in {spec.source}")
        self.service: str = spec.service
        stem = self.service.removesuffix(".service")
        self.unit_path = f"{UNIT_DIR}/{self.service}"
        self.dropin_dir = f"{UNIT_DIR}/{self.service}.d"
        self.env_path = f"{ENV_DIR}/{stem}.env"
        self.backup = HostBackup(transport, f"{BACKUP_ROOT}/{self.service}", host=spec.name)
        self._last_unit: str | None = None
        self._deploy_cursor: str | None = None

    # -- shell helpers ----------------------------------------------------------------------
    def _sh(self, command: str, *args: object, timeout: float = 60.0) -> CommandResult:
        """Run a command on the host (as root, or under ``sudo -n`` when the host says so:
        the transport wraps every command then)."""
        return self.transport.run(command, *args, timeout=timeout)

    def _check(self, what: str, command: str, *args: object, timeout: float = 60.0) -> str:
        return self.backup.check(what, command, *args, timeout=timeout)

    def _show(self, props: str) -> dict[str, str]:
        out = self._check("systemctl show", "systemctl show -p %s -- %s", props, self.service)
        values: dict[str, str] = {}
        for line in out.splitlines():
            key, _, value = line.partition("=")
            values[key] = value
        return values

    # -- backup / restore -------------------------------------------------------------------
    def pending_intent(self) -> dict[str, Any] | None:
        return self.backup.pending()

    def _back_up(self, paths: list[str]) -> None:
        """The intent record before the first change, then copies of ``paths`` and the
        drop-ins moved aside (see :class:`HostBackup` for the order that survives a kill)."""
        if self.backup.manifest is None:
            existing = self.backup.read()
            prior = (
                {} if existing is not None else self._show("ActiveState,UnitFileState,LoadState")
            )
            self.backup.begin(
                self.settings.owner,
                changes={
                    "files": list(paths),
                    "dropin_dir": self.dropin_dir,
                    "restarts": [self.service],
                },
                service={
                    "unit": self.service,
                    "active_state": prior.get("ActiveState", ""),
                    "unit_file_state": prior.get("UnitFileState", ""),
                    "load_state": prior.get("LoadState", ""),
                },
            )
        self.backup.back_up(paths, move_aside=(self.dropin_dir,))

    def restore(self) -> None:
        """Put back the original files and service state; safe to call repeatedly, and from a
        later session (the intent record on the host is all it needs)."""
        manifest = self.backup.manifest or self.backup.read()
        if manifest is None:
            return  # nothing was changed (or it was already restored)
        try:
            self._sh("systemctl stop -- %s", self.service, timeout=90)
            self.backup.restore_files(manifest)
            self._check("daemon-reload", "systemctl daemon-reload", timeout=90)
            self._sh("systemctl reset-failed -- %s", self.service)
            if (manifest.get("service") or {}).get("active_state") in _RUNNING:
                self._check(
                    "restarting the original service",
                    "systemctl start -- %s",
                    self.service,
                    timeout=120,
                )
            self.backup.finish()
        except (DeployError, TransportError) as exc:
            raise RestoreError(
                f"host {self.spec.name!r}: restore of {self.service} incomplete ({exc}); the "
                f"originals are kept in {self.backup.directory}; the next session (or "
                f"'pytest --sglang-restore --sglang-host {self.spec.name}') restores them"
            ) from exc

    # -- deploy -----------------------------------------------------------------------------
    def journal_tail_cursor(self) -> str:
        """The global journal's current end (works even before the unit logged anything)."""
        out = self._check("reading the journal cursor", "journalctl -n 0 --show-cursor --no-pager")
        for line in out.splitlines():
            if line.startswith("-- cursor: "):
                return line[len("-- cursor: ") :].strip()
        return ""

    def _render(self, plan: LaunchPlan) -> tuple[str, str]:
        """(unit text, env-file text) that deploying ``plan`` writes."""
        unit = render_unit(
            description=f"SGLang {plan.config.id} (pytest-sglang)",
            exec_argv=plan.argv,
            environment_file=self.env_path,
            config_id=plan.config.id,
            digest=plan.config.digest,
        )
        return unit, render_env_file(plan.env)

    def dry_run(self, plan: LaunchPlan) -> str:
        """Unified diffs of the unit, env file (secrets redacted) and files; which services
        would restart. Reads only."""
        self.preflight(plan)
        for value in plan.secrets(self.redactor.is_secret_name):
            self.redactor.add(value)
        unit, _env_text = self._render(plan)
        masked = render_env_file(self.redactor.env_view(plan.env))
        current_unit = self._current_text(self.unit_path)
        current_env = self._current_text(self.env_path)
        # the host's own secrets are in the "-" lines
        self.redactor.add_unit_text(current_unit)
        self.redactor.add_unit_text(current_env)
        targets: list[tuple[str, str | None, str]] = [
            (self.unit_path, current_unit, unit),
            (self.env_path, current_env, masked),
        ]
        for dest, spec in plan.files.items():
            new = spec.data().decode("utf-8", "replace")
            targets.append((dest, self._current_text(dest), new))
        out: list[str] = []
        for path, old, new in targets:
            out.append(render_diff(path, old, new))
        if self._sh("test -d %s", self.dropin_dir).ok:
            out.append(f"would move aside for the session: {self.dropin_dir}")
        active = self._show("ActiveState").get("ActiveState", "")
        out.append(
            f"would restart: {self.service} (now {active or 'unknown'}); restored and "
            f"{'restarted' if active in _RUNNING else 'left stopped'}"
            " at the end"
        )
        return self.redact("\n".join(line for line in out if line))

    def _current_text(self, path: str) -> str | None:
        result = self._sh("cat -- %s", path)
        return result.stdout if result.ok else None

    def _drain_before_first_stop(self) -> None:
        """Let the service we are about to replace finish its in-flight requests."""
        if self.settings.drain_timeout <= 0 or self.backup.manifest is None:
            return
        if self._deploy_cursor is not None:
            return  # our own previous config: nothing else was using it
        if self._show("ActiveState").get("ActiveState") != "active":
            return
        show = self._sh("systemctl show -p ExecStart -- %s", self.service).stdout
        words = show.split("argv[]=", 1)[1].split(" ;", 1)[0].split() if "argv[]=" in show else []
        host, port = serving_port(words)
        remote = "127.0.0.1" if host in LOCAL_ADDRESSES else host
        try:
            forward = self.transport.forward(port, remote)
        except TransportError:
            self.say(f"[sglang] {self.spec.name}: cannot reach {self.service} on port {port}")
            return
        try:
            url = f"http://127.0.0.1:{forward.local_port}"
            drain(
                lambda: in_flight(url),
                what=f"{self.spec.name} {self.service}",
                timeout=self.settings.drain_timeout,
                say=self.say,
            )
        finally:
            forward.close()

    def deploy(self, plan: LaunchPlan) -> str:
        self.preflight(plan)
        unit, env_text = self._render(plan)
        payloads = {dest: (spec.data(), spec.mode) for dest, spec in plan.files.items()}
        self._back_up([self.unit_path, self.env_path, *payloads])
        self._drain_before_first_stop()
        self.backup.write(self.env_path, env_text.encode(), 0o600)
        for dest, (data, mode) in payloads.items():
            self.backup.write(dest, data, mode)
        self.backup.write(self.unit_path, unit.encode(), 0o644)
        self._check("daemon-reload", "systemctl daemon-reload", timeout=90)
        self._sh("systemctl reset-failed -- %s", self.service)
        # Stop first, so the old process's last words fall before the cursor.
        self._check(f"stopping {self.service}", "systemctl stop -- %s", self.service, timeout=90)
        self._sh("systemctl reset-failed -- %s", self.service)
        cursor = self.journal_tail_cursor()
        self._check(f"starting {self.service}", "systemctl start -- %s", self.service, timeout=120)
        self._last_unit = unit
        self._deployed(plan)
        self._deploy_cursor = cursor
        return cursor

    def read_journal(self, after: str) -> tuple[list[JournalEntry], str]:
        command = "journalctl -u %s -o json --all --no-pager"
        args: list[object] = [self.service]
        if after:
            command += " --after-cursor=%s"
            args.append(after)
        result = self._sh(command, *args, timeout=60)
        if not result.ok:
            raise JournalError(
                f"host {self.spec.name!r}: journalctl -u {self.service} failed (rc={result.rc})"
            )
        entries: list[JournalEntry] = []
        for line in result.stdout.splitlines():
            if not line.strip():
                continue
            record = json.loads(line)
            entries.append(
                JournalEntry(
                    cursor=record["__CURSOR"],
                    message=_message(record.get("MESSAGE")),
                    realtime_us=int(record.get("__REALTIME_TIMESTAMP", 0)),
                )
            )
        return entries, (entries[-1].cursor if entries else after)

    def state(self) -> ServiceState:
        values = self._show(_SHOW_PROPS)
        active = values.get("ActiveState", "")
        if (
            values.get("ExecMainCode", "0") == "0"
            and active in ("inactive", "failed")
            and self._deploy_cursor is not None
        ):
            # systemd unloaded the unit after a clean exit; ExecStopPost logged how it ended.
            ended = self._exit_from_journal()
            if ended is not None:
                values.update(ended)
        return ServiceState(
            active_state=values.get("ActiveState", ""),
            sub_state=values.get("SubState", ""),
            main_pid=int(values.get("MainPID") or 0),
            exec_main_code=_EXEC_CODES.get(values.get("ExecMainCode", "0"), "?"),
            exec_main_status=int(values.get("ExecMainStatus") or 0),
            n_restarts=int(values.get("NRestarts") or 0),
            result=values.get("Result", ""),
        )

    def _exit_from_journal(self) -> dict[str, str] | None:
        assert self._deploy_cursor is not None
        found: dict[str, str] | None = None
        for entry in self.read_journal(self._deploy_cursor)[0]:
            if entry.message.startswith(EXIT_MARKER):
                fields = dict(part.split("=", 1) for part in entry.message.split() if "=" in part)
                status = fields.get("status", "")
                if not status.isdigit():
                    status = str(_signal_number(status))
                code = {"exited": "1", "killed": "2", "dumped": "3"}.get(fields.get("code", ""))
                found = {"ExecMainCode": code or "0", "ExecMainStatus": status}
                if fields.get("result"):
                    found["Result"] = fields["result"]
        return found

    def artifacts(self) -> dict[str, str]:
        out = super().artifacts()
        if self._last_unit is not None:
            out["unit"] = self.redact(self._last_unit)
        return out

    def stop(self) -> None:
        self._check(f"stopping {self.service}", "systemctl stop -- %s", self.service, timeout=90)


def _message(value: object) -> str:
    """journald's MESSAGE: a string, or a list of byte values when it is not valid UTF-8."""
    if isinstance(value, list):
        return bytes(int(b) & 0xFF for b in value).decode("utf-8", "replace")
    return "" if value is None else str(value)


def _signal_number(name: str) -> int:
    try:
        return int(signal.Signals[f"SIG{name}"])
    except KeyError:
        return 0
