"""Deploy a launch plan as a systemd service over the host's transport, and restore the host after.

Production's context is kept: where the service exists, the session's command line goes into
ONE drop-in of it, ``<service>.d/zz-pytest-sglang.conf`` (sorted last), which resets
``ExecStart=`` and sets only what the plugin must own (see :func:`.unit.render_dropin`); the
production unit file is never written, and its ``User=``, ``WorkingDirectory=``, environment,
limits and its own drop-ins stay in force. Where the service does not exist yet, the deployer
writes a unit of its own instead.

Before its first change to any file, the deployer records it in the host's backup
(:mod:`.backup`, ``/var/lib/pytest-sglang/<service>/``) together with the service's prior
ActiveState and UnitFileState. ``restore()`` stops the session's server, removes the drop-in
(or the unit) and puts every other file back byte-identical, reloads systemd and starts the
service again only if it was running.
"""

from __future__ import annotations

import json
import shlex
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..cmdline import split_exec_start, unit_assignments
from ..errors import ConfigError, DeployError, JournalError, RestoreError, TransportError
from .backup import HostBackup
from .deployer import Deployer, DeployerSettings, JournalEntry, ServiceState
from .drain import drain, in_flight, serving_port
from .dry_run import render_diff, render_flag_diff
from .follow import JournalFollower, StreamFollower
from .journal import find_fatal
from .launch_plan import LOCAL_ADDRESSES
from .spec import HostSpec
from .unit import EXIT_MARKER, render_dropin, render_env_file, render_unit

if TYPE_CHECKING:
    from ..transport.base import CommandResult, Transport
    from .launch_plan import LaunchPlan

__all__ = ["SystemdDeployer"]

UNIT_DIR = "/etc/systemd/system"
ENV_DIR = "/etc/pytest-sglang"
BACKUP_ROOT = "/var/lib/pytest-sglang"
_EXEC_CODES = {"0": "", "1": "exited", "2": "killed", "3": "dumped"}
_SHOW_PROPS = "ActiveState,SubState,MainPID,ExecMainCode,ExecMainStatus,NRestarts,Result"
_RUNNING = ("active", "activating", "reloading")
#: The session's drop-in: "zz" sorts it after production's own drop-ins, so it has the last word.
DROPIN_NAME = "zz-pytest-sglang.conf"
# $1 the service. Exit status names the step that failed (see SystemdDeployer._restart).
_RESTART = """systemctl daemon-reload || exit 11
systemctl reset-failed -- "$1" 2>/dev/null
systemctl stop -- "$1" || exit 12
systemctl reset-failed -- "$1" 2>/dev/null
journalctl -n 0 --show-cursor --no-pager || exit 13
systemctl start -- "$1" || exit 14
"""
_JOURNAL_TAIL = (Path(__file__).parent / "journal_tail.py").read_text()
# $1 the reader's code, $2 the unit, $3 the cursor: the reader, or journalctl -f where the host
# has no python3 (127) or no usable libsystemd (97); either prints `journalctl -o json` lines.
_FOLLOW = """python3 -c "$1" "$2" "$3"; rc=$?
[ "$rc" -eq 97 ] || [ "$rc" -eq 127 ] || exit "$rc"
[ -n "$3" ] && exec journalctl -u "$2" -f -o json --all --no-pager --cursor="$3"
exec journalctl -u "$2" -f -o json --all --no-pager --no-tail
"""


#: How long a failed start's journal is read for systemd's reason, while journald files it.
REFUSAL_WAIT_S = 3.0


def _cursor(lines: list[str]) -> str:
    """The journal cursor ``journalctl --show-cursor`` printed among ``lines`` ('' if none)."""
    for line in lines:
        if line.startswith("-- cursor: "):
            return line[len("-- cursor: ") :].strip()
    return ""


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
        self.dropin_path = f"{self.dropin_dir}/{DROPIN_NAME}"
        self._production: bool | None = None
        #: (when, the service's state) as ``has_production`` read it: the intent record's prior
        #: state when the first change follows within seconds (else read again).
        self._prior: tuple[float, dict[str, str]] | None = None
        self._production_words: list[str] | None = None
        self._service_env: dict[str, str] | None = None
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

    def has_production(self) -> bool:
        """Whether the service exists (a unit file systemd loaded): then the session runs inside
        it through a drop-in; else the deployer writes a unit of its own."""
        if self._production is None:
            service = (self.backup.manifest or {}).get("service")
            recorded = service.get("production") if isinstance(service, dict) else None
            if isinstance(recorded, bool):
                self._production = recorded
            else:
                # the prior state too, read before any change (the intent record keeps it)
                shown = self._show("LoadState,FragmentPath,ActiveState,UnitFileState")
                self._prior = (time.monotonic(), shown)
                self._production = bool(
                    shown.get("FragmentPath") and shown.get("LoadState") == "loaded"
                )
        return self._production

    @property
    def written_path(self) -> str:
        """Where the session's command line goes: the drop-in, or its own unit."""
        return self.dropin_path if self.has_production() else self.unit_path

    def _back_up(self, paths: list[str]) -> None:
        """The intent record before the first change, then copies of ``paths`` (see
        :class:`HostBackup` for the order that survives a kill)."""
        if self.backup.manifest is None:
            existing = self.backup.read()
            if existing is not None:
                self.backup.begin(self.settings.owner, changes={}, service={})
            else:
                production = self.has_production()
                fresh = self._prior is not None and time.monotonic() - self._prior[0] < 10.0
                prior = (
                    self._prior[1]
                    if fresh and self._prior is not None
                    else self._show("ActiveState,UnitFileState,LoadState")
                )
                self.backup.begin(
                    self.settings.owner,
                    changes={"files": list(paths), "restarts": [self.service]},
                    service={
                        "unit": self.service,
                        "production": production,
                        "active_state": prior.get("ActiveState", ""),
                        "unit_file_state": prior.get("UnitFileState", ""),
                        "load_state": prior.get("LoadState", ""),
                    },
                )
        self.backup.back_up(paths)

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
            # (an intent record of an earlier release keeps the prior state at its top level)
            service = manifest.get("service")
            prior = service if isinstance(service, dict) else manifest
            if prior.get("active_state") in _RUNNING:
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
    def journal_cursor(self) -> str:
        return self.journal_tail_cursor()

    def journal_tail_cursor(self) -> str:
        """The global journal's current end (works even before the unit logged anything)."""
        out = self._check("reading the journal cursor", "journalctl -n 0 --show-cursor --no-pager")
        for line in out.splitlines():
            if line.startswith("-- cursor: "):
                return line[len("-- cursor: ") :].strip()
        return ""

    def _render(self, plan: LaunchPlan) -> tuple[str, str]:
        """(drop-in or unit text, env-file text) that deploying ``plan`` writes."""
        if self.has_production():
            text = render_dropin(
                exec_argv=plan.argv,
                environment_file=self.env_path,
                config_id=plan.config.id,
                digest=plan.config.digest,
            )
        else:
            text = render_unit(
                description=f"SGLang {plan.config.id} (pytest-sglang)",
                exec_argv=plan.argv,
                environment_file=self.env_path,
                config_id=plan.config.id,
                digest=plan.config.digest,
            )
        return text, render_env_file(plan.env)

    def production_command(self) -> list[str] | None:
        """The production service's effective command line, from its unit and its drop-ins as
        they are on disk (``systemctl cat``, the session's own drop-in left out); read once,
        before the session changes anything. None where the service does not exist."""
        given = super().production_command()
        if given is not None:
            return given
        if not self.has_production():
            raise ConfigError(
                f"host {self.spec.name!r}: {self.service} does not exist (systemd has no such "
                "unit), so there is no production to start from: install the service, or set "
                f"production (and launch) in [hosts.{self.spec.name}] of {self.spec.source}"
            )
        if self._production_words is None:
            result = self._sh("systemctl cat -- %s", self.service)
            text = _without_our_dropin(result.stdout) if result.ok else ""
            self.redactor.add_unit_text(text)  # its secrets are in the "-" lines of a dry run
            lines = effective_exec_start(text)
            if len(lines) > 1:
                raise ConfigError(
                    f"host {self.spec.name!r}: {self.service} has {len(lines)} ExecStart= lines "
                    "in force; give it one SGLang command line (or set production in the "
                    "inventory)"
                )
            self._production_words = lines[0] if lines else []
        return self._production_words or None

    def service_env(self) -> dict[str, str]:
        """The service's own ``Environment=`` assignments (its unit and drop-ins; read once):
        a config's server runs inside the service and gets them, so its resolution on the host
        does as well. ``EnvironmentFile=`` files are not read (docs/concepts.md)."""
        if self._service_env is None:
            self._service_env = {}
            if self.has_production():
                result = self._sh("systemctl show -p Environment --value -- %s", self.service)
                try:
                    words = shlex.split(result.stdout) if result.ok else []
                except ValueError:
                    words = []
                for word in words:
                    name, eq, value = word.partition("=")
                    if eq and name:
                        self._service_env[name] = value
                self.redactor.add_env(self._service_env)
        return self._service_env

    def production_launch(self) -> tuple[list[str], list[str]]:
        try:
            return super().production_launch()
        except ConfigError as exc:
            if self.spec.production:
                raise
            raise ConfigError(f"{exc} (read from {self.service}'s ExecStart)") from None

    def dry_run(self, plan: LaunchPlan) -> str:
        """Unified diffs of the drop-in (or unit), env file (secrets redacted) and files, the
        flags that change against production's command line, and which services would
        restart. Reads only."""
        self.preflight(plan)
        text, _env_text = self._render(plan)
        masked = render_env_file(self.redactor.env_view(plan.env))
        current = self._current_text(self.written_path)
        current_env = self._current_text(self.env_path)
        self.redactor.add_unit_text(current)
        self.redactor.add_env_file_text(current_env)
        targets: list[tuple[str, str | None, str]] = [
            (self.written_path, current, text),
            (self.env_path, current_env, masked),
        ]
        for dest, spec in plan.files.items():
            new = spec.data().decode("utf-8", "replace")
            targets.append((dest, self._current_text(dest), new))
        out = [render_diff(path, old, new) for path, old, new in targets]
        if self.has_production():
            production = self.production_command() or []
            out.append(f"flags against production ({self.service}):")
            out.append(render_flag_diff(production, plan.argv) or "  (none)")
            out.append(
                f"runs inside {self.service}'s own context: its unit file and drop-ins stay "
                "in force"
            )
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
        self._back_up([self.written_path, self.env_path, *payloads])
        self._drain_before_first_stop()
        self.backup.write(self.env_path, env_text.encode(), 0o600)
        for dest, (data, mode) in payloads.items():
            self.backup.write(dest, data, mode)
        self.backup.write(self.written_path, unit.encode(), 0o644)
        cursor = self._restart()
        self._last_unit = unit
        self._deployed(plan)
        self._deploy_cursor = cursor
        return cursor

    def _restart(self) -> str:
        """Reload systemd, stop the service (so the old process's last words fall before the
        cursor), take the journal's cursor and start it: one command, one round trip. Returns
        the cursor; a failed step is one DeployError line naming it."""
        result = self._sh("sh -c %s sh %s", _RESTART, self.service, timeout=300)
        lines = result.stdout.splitlines()
        if not result.ok:
            step = {11: "daemon-reload", 12: f"stopping {self.service}"}.get(result.rc)
            step = step or {13: "reading the journal cursor"}.get(result.rc)
            step = step or f"starting {self.service}"
            detail = (result.stderr or result.stdout).strip().splitlines()
            said = self._start_refused(_cursor(lines)) if result.rc == 14 else None
            raise DeployError(
                f"host {self.spec.name!r}: {step} failed (rc={result.rc}): "
                f"{said or (detail[-1] if detail else 'no output')}"
            )
        return _cursor(lines)

    def _start_refused(self, cursor: str) -> str | None:
        """Why systemd failed the start (``systemctl start`` only points at ``journalctl -xeu``):
        the classifier's reading of the unit's journal since ``cursor``, taken just before it;
        read for up to ``REFUSAL_WAIT_S`` while journald files systemd's lines, redacted (a
        command the unit runs first may print anything). None where the
        journal says nothing of it, or cannot be read."""
        deadline = time.monotonic() + REFUSAL_WAIT_S
        while True:
            try:
                entries, _ = self.read_journal(cursor)
            except (JournalError, TransportError):
                return None
            fatal = find_fatal([entry.message for entry in entries])
            if fatal is not None or time.monotonic() >= deadline:
                return None if fatal is None else self.redact(fatal.summary)
            time.sleep(0.2)

    def read_journal(self, after: str) -> tuple[list[JournalEntry], str]:
        # --cursor, not --after-cursor: systemd 252's journalctl skips the unit's first entry
        # after a cursor whose own entry is not the unit's; the cursor's entry is dropped here
        command = "journalctl -u %s -o json --all --no-pager"
        args: list[object] = [self.service]
        if after:
            command += " --cursor=%s"
            args.append(after)
        result = self._sh(command, *args, timeout=60)
        if not result.ok:
            raise JournalError(
                f"host {self.spec.name!r}: journalctl -u {self.service} failed (rc={result.rc})"
            )
        entries: list[JournalEntry] = []
        for line in result.stdout.encode().splitlines():
            entry = _json_entry(line, after)
            if entry is not None:
                entries.append(entry)
        return entries, (entries[-1].cursor if entries else after)

    def follow(self, after: str) -> JournalFollower:
        """The unit's journal on its own channel, each entry within ~10 ms of journald having
        it (:mod:`.journal_tail` in the host's python3; ``journalctl -f``, which learns of new
        entries up to 250 ms late, where that cannot run). Without a cursor (an empty journal)
        it starts at the journal's beginning."""
        try:
            stream = self.transport.stream(
                "sh -c %s sh %s %s %s", _FOLLOW, _JOURNAL_TAIL, self.service, after
            )
        except NotImplementedError:
            return super().follow(after)
        return StreamFollower(stream, after, _json_entry)

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


def effective_exec_start(unit_text: str) -> list[list[str]]:
    """The ``ExecStart=`` command lines that ``systemctl cat`` output (the unit, then its
    drop-ins in order) leaves in force: an empty ``ExecStart=`` resets the list, others add to
    it. Each is the argv its process receives (:func:`pytest_sglang.cmdline.split_exec_start`:
    systemd's quoting, ``%%`` and ``$$`` undone, the executable's prefix characters dropped)."""
    found: list[list[str]] = []
    for key, value in unit_assignments(unit_text):
        if key != "ExecStart":
            continue
        if not value:
            found = []
            continue
        try:
            found.extend(split_exec_start(value))
        except ConfigError:
            continue  # unbalanced quotes: systemd ignores the line too
    return found


def _without_our_dropin(cat_text: str) -> str:
    """``systemctl cat`` output without the session's own drop-in (each file it prints starts
    with a ``# /path`` line)."""
    kept: list[str] = []
    ours = False
    for line in cat_text.splitlines():
        if line.startswith("# /"):
            ours = line.rstrip().endswith("/" + DROPIN_NAME)
        if not ours:
            kept.append(line)
    return "\n".join(kept)


def _json_entry(line: bytes, after: str) -> JournalEntry | None:
    """One line of ``journalctl -o json``: an entry, or None for a blank or cut-off line and
    for the entry at the cursor ``after`` itself (``--cursor`` starts there)."""
    if not line.strip():
        return None
    try:
        record = json.loads(line)
    except ValueError:
        return None  # the stream was cut in the middle of a line; the cursor resumes before it
    if after and record.get("__CURSOR") == after:
        return None
    return JournalEntry(
        cursor=record["__CURSOR"],
        message=_message(record.get("MESSAGE")),
        realtime_us=int(record.get("__REALTIME_TIMESTAMP", 0)),
    )


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
