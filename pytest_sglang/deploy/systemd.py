"""Deploy a config as a systemd unit over the host's transport, and restore the host after.

Before its first change to any file, the deployer copies it (or records that it did not exist)
into ``/var/lib/pytest-sglang/<service>/`` with a ``manifest.json``, together with the service's
prior ActiveState and UnitFileState. ``restore()`` puts every file back byte-identical (``cp -a``
keeps mode and owner), removes files that did not exist, reloads systemd and starts the service
again only if it was running. A backup left by a session that died is reused, never overwritten:
its copies are the real originals.
"""

from __future__ import annotations

import json
import posixpath
import shlex
import signal
from typing import TYPE_CHECKING, Any

from ..errors import DeployError, JournalError, RestoreError, TransportError
from .base import Deployer, JournalEntry, ServiceState, launch_argv
from .drain import drain, in_flight, serving_port
from .plan import render_diff
from .unit import EXIT_MARKER, render_env_file, render_unit

if TYPE_CHECKING:
    from ..config import ServerConfig
    from ..hosts import HostSpec
    from ..transport.base import CommandResult, PortForward, Transport

__all__ = ["SystemdDeployer"]

UNIT_DIR = "/etc/systemd/system"
ENV_DIR = "/etc/pytest-sglang"
BACKUP_ROOT = "/var/lib/pytest-sglang"
_SGLANG_DEFAULT_PORT = 30000
_EXEC_CODES = {"0": "", "1": "exited", "2": "killed", "3": "dumped"}
_SHOW_PROPS = "ActiveState,SubState,MainPID,ExecMainCode,ExecMainStatus,NRestarts,Result"
_LOCAL_ADDRS = ("", "0.0.0.0", "127.0.0.1", "localhost", "::", "::1")


class SystemdDeployer(Deployer):
    """Runs the server as ``spec.service`` (unit in /etc/systemd/system, env file 0600)."""

    def __init__(self, spec: HostSpec, transport: Transport) -> None:
        super().__init__(spec, transport)
        if not spec.service:
            raise DeployError(f"host {spec.name!r}: no 'service' set in {spec.source}")
        self.service: str = spec.service
        stem = self.service.removesuffix(".service")
        self.unit_path = f"{UNIT_DIR}/{self.service}"
        self.dropin_dir = f"{UNIT_DIR}/{self.service}.d"
        self.env_path = f"{ENV_DIR}/{stem}.env"
        self.backup_dir = f"{BACKUP_ROOT}/{self.service}"
        self._manifest: dict[str, Any] | None = None
        self._forwards: dict[tuple[str, int], PortForward] = {}
        self._last_unit: str | None = None
        self._last_argv: list[str] | None = None
        self._last_env: dict[str, str] | None = None
        self._deploy_cursor: str | None = None

    # -- shell helpers ----------------------------------------------------------------------
    @property
    def _needs_sudo(self) -> bool:
        """``spec.sudo`` unless the transport already wraps every command in sudo."""
        return self.spec.sudo and not getattr(self.transport, "sudo", False)

    def _sh(self, command: str, *args: object, timeout: float = 60.0) -> CommandResult:
        """Run a privileged command (``sudo -n`` when the host says so)."""
        if self._needs_sudo:
            inner = command % tuple(shlex.quote(str(a)) for a in args) if args else command
            return self.transport.run("sudo -n sh -c %s", inner, timeout=timeout)
        return self.transport.run(command, *args, timeout=timeout)

    def _check(self, what: str, command: str, *args: object, timeout: float = 60.0) -> str:
        result = self._sh(command, *args, timeout=timeout)
        if not result.ok:
            detail = (result.stderr or result.stdout).strip().splitlines()
            raise DeployError(
                f"host {self.spec.name!r}: {what} failed (rc={result.rc}): "
                f"{detail[-1] if detail else 'no output'}"
            )
        return result.stdout

    def _write(self, path: str, data: bytes, mode: int) -> None:
        directory = posixpath.dirname(path)
        self._check(f"creating {directory}", "mkdir -p -- %s", directory)
        if not self._needs_sudo:
            self.transport.put(data, path, mode=mode)
        else:
            tmp = self.transport.check_output("mktemp").strip()
            try:
                self.transport.put(data, tmp, mode=0o600)
                self._check(
                    f"installing {path}", "install -m %s -- %s %s", format(mode, "o"), tmp, path
                )
            finally:
                self.transport.run("rm -f -- %s", tmp)

    # -- backup / restore -------------------------------------------------------------------
    def _show(self, props: str) -> dict[str, str]:
        out = self._check("systemctl show", "systemctl show -p %s -- %s", props, self.service)
        values: dict[str, str] = {}
        for line in out.splitlines():
            key, _, value = line.partition("=")
            values[key] = value
        return values

    def _read_manifest(self) -> dict[str, Any] | None:
        """The intent record on the host, or None when there is none (or it is unreadable)."""
        existing = self._sh("cat -- %s", f"{self.backup_dir}/manifest.json")
        if not existing.ok or not existing.stdout.strip():
            return None
        try:
            data = json.loads(existing.stdout)
        except ValueError:
            raise RestoreError(
                f"host {self.spec.name!r}: the intent record {self.backup_dir}/manifest.json is "
                "not valid JSON; inspect it and the copies next to it, then remove it"
            ) from None
        return data if isinstance(data, dict) else None

    def pending_intent(self) -> dict[str, Any] | None:
        if self._manifest is not None:
            return None  # ours, not a leftover
        return self._read_manifest()

    def _load_manifest(self, planned: list[str]) -> dict[str, Any]:
        """The intent record, written on the host before the first change.

        It says who changes the host (``owner``: user, machine, pid, session, since) and what will
        change (``changes``), and it grows one entry per file *before* that file is copied or
        touched, so a session killed at any point leaves a record that restores exactly.
        """
        if self._manifest is not None:
            return self._manifest
        existing = self._read_manifest()
        if existing is not None:
            # A previous session died before restoring: its backup holds the originals.
            self._manifest = existing
            return self._manifest
        prior = self._show("ActiveState,UnitFileState,LoadState")
        self._manifest = {
            "version": 1,
            "service": self.service,
            "owner": dict(self.owner),
            "changes": {
                "files": list(planned),
                "dropin_dir": self.dropin_dir,
                "restarts": [self.service],
            },
            "active_state": prior.get("ActiveState", ""),
            "unit_file_state": prior.get("UnitFileState", ""),
            "load_state": prior.get("LoadState", ""),
            "files": {},
            "dropin": None,
        }
        # saved by _backup, which adds the first entries before anything is changed
        self._check("creating the backup dir", "mkdir -p -m 700 -- %s", self.backup_dir)
        return self._manifest

    def _save_manifest(self) -> None:
        assert self._manifest is not None
        data = json.dumps(self._manifest, indent=1, sort_keys=True).encode()
        self._write(f"{self.backup_dir}/manifest.json", data, 0o600)

    def _backup(self, paths: list[str]) -> None:
        """Record, then copy, every path not yet backed up, before any of them is changed.

        Order matters for a kill at any instant: the manifest names each copy before the copy
        is made (restore skips a copy that was never made: its original was not touched yet),
        and names the drop-in move before the move.
        """
        manifest = self._load_manifest(paths)
        files: dict[str, Any] = manifest["files"]
        known = len(files)
        new: list[str] = []
        for path in paths:
            if path in files:
                continue
            copy = f"{self.backup_dir}/files/{len(files)}"
            exists = self._sh("test -e %s || test -L %s", path, path).ok
            files[path] = {"existed": exists, "copy": copy if exists else None}
            if exists:
                new.append(path)
            else:
                manifest.setdefault("created_dirs", []).extend(self._missing_dirs(path))
        move_dropin = False
        changed = len(files) != known or manifest["dropin"] is None
        if manifest["dropin"] is None:
            # Drop-ins could override ExecStart or Environment: move them aside for the session.
            move_dropin = self._sh("test -d %s", self.dropin_dir).ok
            moved = f"{self.backup_dir}/dropin"
            manifest["dropin"] = {"existed": move_dropin, "copy": moved if move_dropin else None}
        if changed:  # every redeploy of the same paths would rewrite an identical manifest
            self._save_manifest()
        for path in new:
            copy = files[path]["copy"]
            self._check(
                f"backing up {path}",
                "mkdir -p -- %s && cp -a -- %s %s.tmp && mv -f -- %s.tmp %s",
                posixpath.dirname(copy),
                path,
                copy,
                copy,
                copy,
            )
        if move_dropin:
            self._check(
                "moving drop-ins aside", "mv -- %s %s", self.dropin_dir, manifest["dropin"]["copy"]
            )

    def _missing_dirs(self, path: str) -> list[str]:
        """Ancestors of ``path`` that do not exist yet (deepest first), to remove on restore."""
        missing: list[str] = []
        parent = posixpath.dirname(path)
        while parent not in ("/", "") and not self._sh("test -d %s", parent).ok:
            missing.append(parent)
            parent = posixpath.dirname(parent)
        return missing

    def restore(self) -> None:
        """Put back the original files and service state; safe to call repeatedly, and from a
        later session (the intent record on the host is all it needs)."""
        manifest = self._manifest if self._manifest is not None else self._read_manifest()
        if manifest is None:
            return  # nothing was changed (or it was already restored)
        try:
            self._sh("systemctl stop -- %s", self.service, timeout=90)
            for path, info in manifest["files"].items():
                if not info["existed"]:
                    self._check(f"removing {path}", "rm -f -- %s", path)
                elif self._sh("test -e %s || test -L %s", info["copy"], info["copy"]).ok:
                    self._check(
                        f"restoring {path}",
                        "cp -a -- %s %s.sglang-restore && mv -f -- %s.sglang-restore %s",
                        info["copy"],
                        path,
                        path,
                        path,
                    )
                # else: killed before the copy was made, so the original was never touched.
            dropin = manifest.get("dropin") or {}
            if dropin.get("existed") and self._sh("test -d %s", dropin["copy"]).ok:
                self._check(
                    "restoring drop-ins",
                    "rm -rf -- %s && cp -a -- %s %s",
                    self.dropin_dir,
                    dropin["copy"],
                    self.dropin_dir,
                )
            created = set(manifest.get("created_dirs", []))
            for directory in sorted(created, key=lambda d: d.count("/"), reverse=True):
                self._sh("rmdir -- %s", directory)  # only if empty; ours are
            self._check("daemon-reload", "systemctl daemon-reload", timeout=90)
            self._sh("systemctl reset-failed -- %s", self.service)
            if manifest.get("active_state") in ("active", "activating", "reloading"):
                self._check(
                    "restarting the original service",
                    "systemctl start -- %s",
                    self.service,
                    timeout=120,
                )
            self._check("removing the backup", "rm -rf -- %s", self.backup_dir)
            self._sh("rmdir -- %s", BACKUP_ROOT)  # only if no other service has a backup
        except (DeployError, TransportError) as exc:
            raise RestoreError(
                f"host {self.spec.name!r}: restore of {self.service} incomplete ({exc}); the "
                f"originals are kept in {self.backup_dir}; the next session (or "
                f"'pytest --sglang-restore --sglang-host {self.spec.name}') restores them"
            ) from exc
        self._manifest = None

    # -- deploy -----------------------------------------------------------------------------
    def journal_tail_cursor(self) -> str:
        """The global journal's current end (works even before the unit logged anything)."""
        out = self._check("reading the journal cursor", "journalctl -n 0 --show-cursor --no-pager")
        for line in out.splitlines():
            if line.startswith("-- cursor: "):
                return line[len("-- cursor: ") :].strip()
        return ""

    def _render(self, config: ServerConfig) -> tuple[list[str], dict[str, str], str, str]:
        """(argv, env, unit text, env-file text) that deploying ``config`` writes."""
        version = self.sglang_version()
        argv = launch_argv(self.spec) + config.to_argv(version)
        env = {**self.spec.env, **config.env}
        unit = render_unit(
            description=f"SGLang {config.id} (pytest-sglang)",
            exec_argv=argv,
            environment_file=self.env_path,
            config_id=config.id,
            digest=config.digest,
        )
        return argv, env, unit, render_env_file(env)

    def plan(self, config: ServerConfig) -> str:
        """Unified diffs of the unit, env file (secrets redacted) and files; which services
        would restart. Reads only."""
        self.preflight(config)
        _argv, env, unit, _env_text = self._render(config)
        masked = render_env_file(self.redactor.env_view(env) if self.redactor else env)
        current_unit = self._current_text(self.unit_path)
        current_env = self._current_text(self.env_path)
        if self.redactor is not None:  # the host's own secrets are in the "-" lines
            self.redactor.add_unit_text(current_unit)
            self.redactor.add_unit_text(current_env)
        targets: list[tuple[str, str | None, str]] = [
            (self.unit_path, current_unit, unit),
            (self.env_path, current_env, masked),
        ]
        for dest, spec in config.files.items():
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
            f"{'restarted' if active in ('active', 'activating', 'reloading') else 'left stopped'}"
            " at the end"
        )
        return self.redact("\n".join(line for line in out if line))

    def _current_text(self, path: str) -> str | None:
        result = self._sh("cat -- %s", path)
        return result.stdout if result.ok else None

    def _drain_before_first_stop(self) -> None:
        """Let the service we are about to replace finish its in-flight requests."""
        if self.drain_timeout <= 0 or self._manifest is None:
            return
        if self._deploy_cursor is not None:
            return  # our own previous config: nothing else was using it
        if self._show("ActiveState").get("ActiveState") != "active":
            return
        show = self._sh("systemctl show -p ExecStart -- %s", self.service).stdout
        words = show.split("argv[]=", 1)[1].split(" ;", 1)[0].split() if "argv[]=" in show else []
        host, port = serving_port(words)
        remote = "127.0.0.1" if host in _LOCAL_ADDRS else host
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
                timeout=self.drain_timeout,
                say=self.say,
            )
        finally:
            forward.close()

    def deploy(self, config: ServerConfig) -> str:
        self.preflight(config)
        argv, env, unit, env_text = self._render(config)
        payloads = {dest: (spec.data(), spec.mode) for dest, spec in config.files.items()}
        self._backup([self.unit_path, self.env_path, *payloads])
        self._drain_before_first_stop()
        self._write(self.env_path, env_text.encode(), 0o600)
        for dest, (data, mode) in payloads.items():
            self._write(dest, data, mode)
        self._write(self.unit_path, unit.encode(), 0o644)
        self._check("daemon-reload", "systemctl daemon-reload", timeout=90)
        self._sh("systemctl reset-failed -- %s", self.service)
        # Stop first, so the old process's last words fall before the cursor.
        self._check(f"stopping {self.service}", "systemctl stop -- %s", self.service, timeout=90)
        self._sh("systemctl reset-failed -- %s", self.service)
        cursor = self.journal_tail_cursor()
        self._check(f"starting {self.service}", "systemctl start -- %s", self.service, timeout=120)
        self._last_unit, self._last_argv, self._last_env = unit, argv, env
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

    def base_url(self, config: ServerConfig) -> str:
        """Port-forward to the server (``config.port``, else SGLang's default 30000)."""
        port = config.port or _SGLANG_DEFAULT_PORT
        host = config.host or "127.0.0.1"
        remote = "127.0.0.1" if host in _LOCAL_ADDRS else host
        key = (remote, port)
        if key not in self._forwards:
            self._forwards[key] = self.transport.forward(port, remote)
        return f"http://127.0.0.1:{self._forwards[key].local_port}"

    def artifacts(self) -> dict[str, str]:
        out = super().artifacts()
        if self._last_unit is not None:
            out["unit"] = self.redact(self._last_unit)
        return out

    def stop(self) -> None:
        self._check(f"stopping {self.service}", "systemctl stop -- %s", self.service, timeout=90)

    def close(self) -> None:
        for forward in self._forwards.values():
            forward.close()
        self._forwards.clear()
        super().close()


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
