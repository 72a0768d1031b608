"""A host reached over SSH (paramiko): commands, SFTP files and port forwards on one connection.

Why these choices:

- One connection, opened on first use and reused; a keepalive keeps NAT/firewalls from dropping
  it while a model loads for minutes. A connection found dead is reopened once for the next
  operation; a command that was running when it dropped is reported, never re-run silently (it
  may have restarted a service).
- Strict host-key checking by default: an unknown key is refused with its fingerprint and the
  command that trusts it, a changed key is refused with both fingerprints. ``strict_host_keys=
  False`` accepts unknown keys for the connection only (like OpenSSH's ``accept-new`` without
  saving); a changed key is always refused.
- Key or agent authentication only, never a prompt; every wait (TCP connect, banner, auth,
  channel open, command) is bounded.
- ``put`` writes a temp file created 0600 next to the target, chmods it, then renames it over the
  target, so readers never see a partial file and a secret is never world-readable.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import getpass
import hashlib
import os
import posixpath
import select
import shlex
import socket
import threading
import time
import uuid
from typing import Any

import paramiko

from ..errors import CommandTimeout, ConnectError, HostKeyError, TransportError
from .base import CommandResult, CommandStream, LinkWatch, PortForward, Transport
from .local import _short
from .ssh_forward import SshPortForward

__all__ = ["SshCommandStream", "SshLinkWatch", "SshPortForward", "SshTransport", "fingerprint"]

_CHUNK = 65536
_POLL = 0.2  # the longest a wait goes without re-checking deadline and connection
_MISSING = 44  # exit status of the sudo `get` helper when the file does not exist
#: Tries at opening the SFTP subsystem on a live connection, and the pause between them.
SFTP_ATTEMPTS = 3
SFTP_RETRY_S = 0.5


def fingerprint(key: paramiko.PKey) -> str:
    """OpenSSH's ``SHA256:...`` fingerprint of a public key (what ``ssh-keygen -lf`` prints)."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def _key_name(hostname: str, port: int) -> str:
    """How known_hosts names a host: ``host`` on port 22, ``[host]:port`` otherwise."""
    return hostname if port == 22 else f"[{hostname}]:{port}"


class _RejectUnknown(paramiko.MissingHostKeyPolicy):
    """Refuse an unknown key with a message that says how to trust it."""

    def __init__(self, owner: SshTransport) -> None:
        self.owner = owner

    def missing_host_key(
        self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
    ) -> None:
        o = self.owner
        raise HostKeyError(
            f"{o.name}: unknown host key {key.get_name()} {fingerprint(key)} (strict host key "
            f"checking); if that fingerprint is the host's, trust it with: ssh-keyscan -p {o.port} "
            f"{o.hostname} >> {o.known_hosts_label}",
            host=o.name,
        )


class _AcceptUnknown(paramiko.MissingHostKeyPolicy):
    """Accept an unknown key for this connection only (saves nothing)."""

    def missing_host_key(
        self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
    ) -> None:
        return None


class SshTransport(Transport):
    """Run commands, move files and forward ports on ``user@hostname:port`` over SSH.

    ``proxy_jump`` is another :class:`SshTransport` or ``"user@host:port"`` (which then uses
    this transport's key and known_hosts); the target is reached through a ``direct-tcpip``
    channel of the jump host's connection. ``sudo=True`` runs commands as
    ``sudo -n sh -c '...'`` and moves files through a temp file and ``sudo install``.
    """

    def __init__(
        self,
        hostname: str,
        *,
        port: int = 22,
        user: str | None = None,
        key_filename: str | os.PathLike[str] | None = None,
        known_hosts: str | os.PathLike[str] | None = None,
        strict_host_keys: bool = True,
        connect_timeout: float = 10.0,
        keepalive: int = 15,
        proxy_jump: SshTransport | str | None = None,
        display_name: str | None = None,
        sudo: bool = False,
    ) -> None:
        self.hostname = hostname
        self.port = port
        self.user = user or getpass.getuser()
        self.key_filename = os.fspath(key_filename) if key_filename is not None else None
        self.known_hosts = os.fspath(known_hosts) if known_hosts is not None else None
        self.strict_host_keys = strict_host_keys
        self.connect_timeout = connect_timeout
        self.keepalive = keepalive
        self.sudo = sudo
        self.name = display_name or f"ssh://{self.user}@{hostname}:{port}"
        self._own_jump = isinstance(proxy_jump, str)
        self._jump = self._jump_from_spec(proxy_jump) if isinstance(proxy_jump, str) else proxy_jump
        self._lock = threading.RLock()
        self._client: paramiko.SSHClient | None = None
        self._sftp_client: paramiko.SFTPClient | None = None
        self._forwards: set[SshPortForward] = set()

    @property
    def known_hosts_label(self) -> str:
        return self.known_hosts or "~/.ssh/known_hosts"

    def _jump_from_spec(self, spec: str) -> SshTransport:
        user, _, hostport = spec.rpartition("@")
        host, port = hostport, 22
        if hostport.startswith("["):  # [v6]:port
            host, _, rest = hostport[1:].partition("]")
            port = int(rest[1:]) if rest.startswith(":") else 22
        elif hostport.count(":") == 1:
            host, _, p = hostport.partition(":")
            port = int(p)
        return SshTransport(
            host,
            port=port,
            user=user or None,
            key_filename=self.key_filename,
            known_hosts=self.known_hosts,
            strict_host_keys=self.strict_host_keys,
            connect_timeout=self.connect_timeout,
            keepalive=self.keepalive,
        )

    # -- connection --------------------------------------------------------------------------

    def _transport(self) -> paramiko.Transport:
        """The live connection, opened (or reopened once, if it dropped) on demand."""
        with self._lock:
            if self._client is not None:
                live = self._client.get_transport()
                if live is not None and live.is_active():
                    return live
                self._reset()
            client = self._connect()
            live = client.get_transport()
            if live is None:  # pragma: no cover - connect() either sets it or raises
                client.close()
                raise ConnectError(f"{self.name}: connection closed during setup", host=self.name)
            if self.keepalive:
                live.set_keepalive(self.keepalive)
            self._client = client
            self.connects += 1
            return live

    def _reset(self) -> None:
        with self._lock:
            if self._sftp_client is not None:
                self._sftp_client.close()
                self._sftp_client = None
            if self._client is not None:
                self._client.close()
                self._client = None

    def _connect(self) -> paramiko.SSHClient:
        pkey = self._load_key()
        client = paramiko.SSHClient()
        try:
            self._load_known_hosts(client)
            client.set_missing_host_key_policy(
                _RejectUnknown(self) if self.strict_host_keys else _AcceptUnknown()
            )
            sock = self._jump_channel() if self._jump is not None else None
            use_defaults = self.key_filename is None
            client.connect(
                self.hostname,
                port=self.port,
                username=self.user,
                pkey=pkey,
                look_for_keys=use_defaults,
                allow_agent=use_defaults,
                timeout=self.connect_timeout,
                banner_timeout=self.connect_timeout,
                auth_timeout=self.connect_timeout,
                channel_timeout=self.connect_timeout,
                sock=sock,
            )
        except BaseException as exc:
            client.close()
            raise self._connect_error(exc) from exc
        return client

    def _load_key(self) -> paramiko.PKey | None:
        """Load the identity file first, so that a bad file is not reported as a bad host."""
        if self.key_filename is None:
            return None
        if not os.path.exists(self.key_filename):
            raise ConnectError(
                f"{self.name}: identity file {self.key_filename} not found; check key_filename",
                host=self.name,
            )
        try:
            return paramiko.PKey.from_path(self.key_filename)
        except (paramiko.PasswordRequiredException, TypeError) as exc:
            # TypeError: cryptography's "Key is password-protected, but password was not provided"
            raise ConnectError(
                f"{self.name}: key {self.key_filename} is encrypted and passphrases are never "
                "prompted for; load it into ssh-agent and leave key_filename unset",
                host=self.name,
            ) from exc
        except (paramiko.SSHException, OSError, ValueError) as exc:
            raise ConnectError(
                f"{self.name}: identity file {self.key_filename} is not a usable private key "
                f"({' '.join(str(exc).split()) or type(exc).__name__})",
                host=self.name,
            ) from exc

    def _load_known_hosts(self, client: paramiko.SSHClient) -> None:
        if self.known_hosts is None:
            for path in ("/etc/ssh/ssh_known_hosts", os.path.expanduser("~/.ssh/known_hosts")):
                if os.path.exists(path):
                    client.load_system_host_keys(path)
        elif os.path.exists(self.known_hosts):
            client.load_host_keys(self.known_hosts)
        elif self.strict_host_keys:
            raise HostKeyError(
                f"{self.name}: known_hosts file {self.known_hosts} does not exist; create it "
                f"(after checking the fingerprint) with: ssh-keyscan -p {self.port} "
                f"{self.hostname} >> {self.known_hosts}",
                host=self.name,
            )

    def _jump_channel(self) -> paramiko.Channel:
        assert self._jump is not None
        jump = self._jump
        try:
            return jump._transport().open_channel(
                "direct-tcpip",
                (self.hostname, self.port),
                ("127.0.0.1", 0),
                timeout=self.connect_timeout,
            )
        except paramiko.ChannelException as exc:
            raise ConnectError(
                f"{self.name}: jump host {jump.name} cannot reach {self.hostname}:{self.port} "
                f"({exc.text}); check the address from the jump host's side",
                host=self.name,
            ) from exc
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise ConnectError(
                f"{self.name}: jump host {jump.name} failed: {exc}", host=self.name
            ) from exc

    def _connect_error(self, exc: BaseException) -> BaseException:
        """Translate what ``SSHClient.connect`` raised into one-line errors that say what to try."""
        n, t = self.name, self.connect_timeout
        if isinstance(exc, (TransportError, KeyboardInterrupt, SystemExit)):
            return exc
        if isinstance(exc, paramiko.BadHostKeyException):
            label = self.known_hosts_label
            return HostKeyError(
                f"{n}: host key CHANGED: the server offered {exc.key.get_name()} "
                f"{fingerprint(exc.key)} but {label} has {fingerprint(exc.expected_key)}; if "
                f"the host was really reinstalled, remove the old entry (ssh-keygen -R "
                f"'{_key_name(self.hostname, self.port)}' -f {label}) and trust the new key",
                host=n,
            )
        if isinstance(exc, paramiko.PasswordRequiredException):  # a default key, not ours
            return ConnectError(
                f"{n}: a default key in ~/.ssh is encrypted and passphrases are never prompted "
                "for; load it into ssh-agent or pass key_filename",
                host=n,
            )
        if isinstance(exc, paramiko.AuthenticationException):
            what = (
                f"key {self.key_filename}"
                if self.key_filename
                else "ssh-agent and default keys ~/.ssh/id_*"
            )
            return ConnectError(
                f"{n}: authentication failed ({what} refused); check identity/user", host=n
            )
        if isinstance(exc, paramiko.ssh_exception.NoValidConnectionsError):
            causes = sorted({getattr(e, "strerror", None) or str(e) for e in exc.errors.values()})
            return ConnectError(
                f"{n}: cannot connect ({'; '.join(causes)}); is sshd listening on port "
                f"{self.port}?",
                host=n,
            )
        if isinstance(exc, socket.gaierror):
            return ConnectError(f"{n}: cannot resolve {self.hostname} ({exc.strerror})", host=n)
        if isinstance(exc, (socket.timeout, TimeoutError)):
            return ConnectError(
                f"{n}: connection timed out after {t:g}s; check the address, port and firewall",
                host=n,
            )
        if isinstance(exc, OSError):
            return ConnectError(f"{n}: cannot connect ({exc.strerror or exc})", host=n)
        if isinstance(exc, paramiko.SSHException):
            detail = " ".join(str(exc).split()) or type(exc).__name__
            return ConnectError(
                f"{n}: SSH handshake failed within {t:g}s ({detail}); is it an SSH server?",
                host=n,
            )
        if isinstance(exc, EOFError):
            return ConnectError(f"{n}: the server closed the connection during setup", host=n)
        return exc

    def __enter__(self) -> SshTransport:
        return self

    def close(self) -> None:
        for fwd in list(self._forwards):
            fwd.close()
        self._reset()
        if self._own_jump and self._jump is not None:
            self._jump.close()

    # -- commands ----------------------------------------------------------------------------

    def _wrap(self, command: str) -> str:
        """The remote command line: always POSIX ``sh``, and under ``sudo -n`` when asked."""
        inner = f"sh -c {shlex.quote(command)}"
        return f"sudo -n {inner}" if self.sudo else inner

    def _run(self, command: str, *, timeout: float) -> CommandResult:
        rc, out, err = self._exec(self._wrap(command), timeout=timeout, shown=command)
        return CommandResult(
            command=command,
            rc=rc,
            stdout=out.decode("utf-8", "replace"),
            stderr=err.decode("utf-8", "replace"),
        )

    def _session(self) -> paramiko.Channel:
        """A fresh session channel; a connection that turns out dead is reopened once."""
        for attempt in (1, 2):
            live = self._transport()
            try:
                return live.open_session(timeout=self.connect_timeout)
            except (paramiko.SSHException, EOFError, OSError) as exc:
                self._reset()
                if attempt == 2:
                    raise TransportError(
                        f"{self.name}: cannot open an SSH session ({exc or type(exc).__name__})",
                        host=self.name,
                    ) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _exec(self, line: str, *, timeout: float, shown: str) -> tuple[int, bytes, bytes]:
        """Run ``line`` as the remote command; return (status, stdout, stderr)."""
        chan = self._session()
        live = chan.get_transport()
        deadline = time.monotonic() + timeout
        out, err = bytearray(), bytearray()
        try:
            try:
                chan.settimeout(self.connect_timeout)
                chan.exec_command(line)
                chan.shutdown_write()  # stdin: EOF
            except (paramiko.SSHException, EOFError, OSError) as exc:
                raise self._lost(shown, "while starting") from exc
            while True:
                while chan.recv_ready():
                    out += chan.recv(_CHUNK)
                while chan.recv_stderr_ready():
                    err += chan.recv_stderr(_CHUNK)
                if chan.closed or (chan.eof_received and chan.exit_status_ready()):
                    break
                if not live.is_active():
                    raise self._lost(shown, "while running")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise CommandTimeout(
                        f"{self.name}: command ran past its {timeout:g}s timeout (its channel was "
                        f"closed; the remote process may still run): {_short(shown)}",
                        host=self.name,
                    )
                if chan.eof_received:
                    chan.status_event.wait(min(remaining, _POLL))
                else:
                    select.select([chan], [], [], min(remaining, _POLL))
            while chan.recv_ready():
                out += chan.recv(_CHUNK)
            while chan.recv_stderr_ready():
                err += chan.recv_stderr(_CHUNK)
            if chan.exit_status == -1 and not live.is_active():
                raise self._lost(shown, "while running")
            return chan.recv_exit_status(), bytes(out), bytes(err)
        finally:
            chan.close()

    def _stream(self, command: str, stdin: bytes = b"") -> CommandStream:
        """The command on its own channel of the shared connection, read as it arrives."""
        chan = self._session()
        try:
            chan.settimeout(self.connect_timeout)
            chan.exec_command(self._wrap(command))
            if stdin:
                chan.sendall(stdin)
            chan.shutdown_write()
        except (paramiko.SSHException, EOFError, OSError) as exc:
            chan.close()
            raise self._lost(command, "while starting") from exc
        return SshCommandStream(self, chan, command)

    def _lost(self, shown: str, when: str) -> TransportError:
        self._reset()
        return TransportError(
            f"{self.name}: SSH connection lost {when} a command (not re-run; it may or may not "
            f"have taken effect; the next operation reconnects): {_short(shown)}",
            host=self.name,
        )

    # -- files -------------------------------------------------------------------------------

    def _sftp(self) -> paramiko.SFTPClient:
        with self._lock:
            live = self._transport()
            sftp = self._sftp_client
            if sftp is not None and sftp.get_channel() is not None:
                chan = sftp.get_channel()
                if chan is not None and not chan.closed and chan.get_transport() is live:
                    return sftp
            for attempt in range(SFTP_ATTEMPTS):
                try:
                    sftp = paramiko.SFTPClient.from_transport(live)
                    break
                except (paramiko.SSHException, EOFError, OSError) as exc:
                    # A busy sshd may close the subsystem's channel before its first packet
                    # (EOFError, no message), and a connection that dropped while idle is only
                    # found out here (a broken pipe): nothing was done yet, so opening it again,
                    # on a new connection where the old one is gone, is harmless.
                    if attempt + 1 < SFTP_ATTEMPTS:
                        time.sleep(SFTP_RETRY_S)
                        if not live.is_active():
                            live = self._transport()
                        continue
                    raise TransportError(
                        f"{self.name}: cannot start SFTP ({exc or type(exc).__name__}); is the "
                        "sftp subsystem enabled?",
                        host=self.name,
                    ) from exc
            if sftp is None:  # pragma: no cover - paramiko returns None only on odd servers
                raise TransportError(f"{self.name}: cannot start SFTP", host=self.name)
            self._sftp_client = sftp
            return sftp

    def _file_error(self, action: str, path: str, exc: BaseException) -> TransportError:
        if isinstance(exc, (EOFError, paramiko.SSHException)) or (
            isinstance(exc, OSError) and exc.errno is None
        ):
            self._reset()
            return TransportError(
                f"{self.name}: SSH connection lost while trying to {action} {path} "
                f"({exc or type(exc).__name__}); the next operation reconnects",
                host=self.name,
            )
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return TransportError(f"{self.name}: cannot {action} {path} ({detail})", host=self.name)

    def _sftp_write(self, sftp: paramiko.SFTPClient, data: bytes, path: str, mode: int) -> None:
        """Temp file created 0600 (O_EXCL) beside ``path``, written, chmod-ed, renamed over it."""
        directory, base = posixpath.split(path)
        tmp = posixpath.join(directory, f".{base}.{uuid.uuid4().hex[:12]}.tmp")
        handle = _open_private(sftp, tmp)
        try:
            with handle:
                handle.set_pipelined(True)
                handle.write(data)
                handle.chmod(mode)  # still a private temp file: never world-readable with data
            # Pipelined writes lose the server's error replies (a full disk reads as success):
            # never rename a short file over the real one.
            written = sftp.stat(tmp).st_size
            if written != len(data):
                raise OSError(
                    errno.ENOSPC,
                    f"only {written} of {len(data)} bytes reached the disk; file system full?",
                )
            sftp.posix_rename(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError, EOFError, paramiko.SSHException):
                sftp.remove(tmp)
            raise

    def put(self, data: bytes, path: str, *, mode: int = 0o644) -> None:
        self.round_trips += 1
        if self.sudo:
            self._sudo_put(data, path, mode)
            return
        try:
            self._sftp_write(self._sftp(), data, path, mode)
        except TransportError:
            raise
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise self._file_error("write", path, exc) from exc

    def get(self, path: str) -> bytes:
        self.round_trips += 1
        if self.sudo:
            return self._sudo_get(path)
        try:
            with self._sftp().open(path, "rb") as handle:
                handle.prefetch()
                return handle.read()
        except TransportError:
            raise
        except FileNotFoundError:
            raise FileNotFoundError(errno.ENOENT, f"{self.name}: no such file", path) from None
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise self._file_error("read", path, exc) from exc

    def _sudo_put(self, data: bytes, path: str, mode: int) -> None:
        tmp = f"/tmp/.pytest-sglang-{uuid.uuid4().hex}"
        try:
            self._sftp_write(self._sftp(), data, tmp, 0o600)
        except TransportError:
            raise
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise self._file_error("stage", path, exc) from exc
        script = (
            'umask 077; t="$2.$3.tmp"; install -m "$4" -- "$1" "$t" && mv -f -- "$t" "$2"; '
            'rc=$?; rm -f -- "$1" "$t"; exit $rc'
        )
        args = " ".join(shlex.quote(a) for a in (tmp, path, uuid.uuid4().hex[:12], f"{mode:o}"))
        line = f"sudo -n sh -c {shlex.quote(script)} sh {args}"
        rc, _out, err = self._exec(line, timeout=60.0, shown=f"sudo install {path}")
        if rc != 0:
            last = (err.decode("utf-8", "replace").strip().splitlines() or ["no output"])[-1]
            raise TransportError(f"{self.name}: cannot write {path} ({last})", host=self.name)

    def _sudo_get(self, path: str) -> bytes:
        script = f'test -e "$1" || exit {_MISSING}; exec cat -- "$1"'
        line = f"sudo -n sh -c {shlex.quote(script)} sh {shlex.quote(path)}"
        rc, out, err = self._exec(line, timeout=60.0, shown=f"sudo cat {path}")
        if rc == _MISSING:
            raise FileNotFoundError(errno.ENOENT, f"{self.name}: no such file", path)
        if rc != 0:
            last = (err.decode("utf-8", "replace").strip().splitlines() or ["no output"])[-1]
            raise TransportError(f"{self.name}: cannot read {path} ({last})", host=self.name)
        return out

    def watch_link(self) -> SshLinkWatch | None:
        with self._lock:
            live = self._client.get_transport() if self._client is not None else None
        if live is None or not live.is_active():
            return None
        return SshLinkWatch(live)

    # -- port forwarding ---------------------------------------------------------------------

    def forward(self, remote_port: int, remote_host: str = "127.0.0.1") -> PortForward:
        self._transport()  # fail here, not on the first connection to the local port
        fwd = SshPortForward(self, remote_host, remote_port)
        self._forwards.add(fwd)
        return fwd

    def _open_tunnel(self, remote_host: str, remote_port: int, origin: Any) -> paramiko.Channel:
        try:
            return self._transport().open_channel(
                "direct-tcpip", (remote_host, remote_port), origin, timeout=self.connect_timeout
            )
        except paramiko.ChannelException as exc:
            raise TransportError(
                f"{self.name}: cannot reach {remote_host}:{remote_port} from the host ({exc.text})",
                host=self.name,
            ) from exc
        except (paramiko.SSHException, EOFError, OSError) as exc:
            self._reset()
            raise TransportError(
                f"{self.name}: cannot open a tunnel to {remote_host}:{remote_port} ({exc})",
                host=self.name,
            ) from exc


class SshLinkWatch(LinkWatch):
    """Keepalive requests (``keepalive@openssh.com``, answered by any sshd) on the live
    connection, one at a time, each timed until its answer. Never on a new connection: a
    watch that reconnected during a cut would itself be what a cut breaks."""

    #: Seconds between two round trips: a stall of a second shows in a few of them.
    INTERVAL = 0.2

    def __init__(self, live: paramiko.Transport) -> None:
        self.live = live
        self.samples: list[tuple[float, float]] = []
        self.pending: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sglang-link-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set() and self.live.is_active():
            sent = self.pending = time.perf_counter()
            try:
                self.live.global_request("keepalive@openssh.com", wait=True)
            except (paramiko.SSHException, EOFError, OSError):
                return
            self.samples.append((sent, time.perf_counter() - sent))
            self.pending = None
            self._stop.wait(self.INTERVAL)

    def stop(self) -> list[tuple[float, float]]:
        self._stop.set()
        self._thread.join(timeout=self.INTERVAL * 2)
        out = list(self.samples)
        pending = self.pending
        if pending is not None:
            out.append((pending, time.perf_counter() - pending))
        return out


class SshCommandStream(CommandStream):
    """A remote command's stdout on one SSH channel. Its stderr is read and dropped (an unread
    stderr would hold the channel's window shut); closing the channel hangs up on the command,
    which ends at its next write."""

    def __init__(self, owner: SshTransport, chan: paramiko.Channel, command: str) -> None:
        self.owner = owner
        self.chan = chan
        self.command = command
        self.end = ""

    def read(self, timeout: float) -> bytes | None:
        if self.end:
            return None
        chan = self.chan
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            while chan.recv_stderr_ready():
                chan.recv_stderr(_CHUNK)
            if chan.recv_ready():
                return bytes(chan.recv(_CHUNK))
            live = chan.get_transport()
            if live is None or not live.is_active():
                self.owner._reset()
                self.end = "the SSH connection dropped"
                return None
            if chan.closed or chan.eof_received:
                self.end = "the command exited"
                return None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return b""
            # wakes on data, EOF or close; bounded so that a dead connection is noticed
            select.select([chan], [], [], min(remaining, _POLL * 5))

    def close(self) -> None:
        if not self.end:
            self.end = "closed"
        with contextlib.suppress(Exception):
            self.chan.close()


def _open_private(sftp: paramiko.SFTPClient, path: str) -> paramiko.SFTPFile:
    """Open ``path`` for writing with O_CREAT|O_EXCL and mode 0600 in the same request.

    ``SFTPClient.open`` sends no permissions, so the file would exist 0644 (umask) until a
    chmod, and a reader could open it in that window and read the data written afterwards.
    """
    from paramiko import sftp as proto

    request = getattr(sftp, "_request", None)
    if request is None:  # pragma: no cover - a paramiko without the private API
        handle = sftp.open(path, "x")
        handle.chmod(0o600)
        return handle
    attrs = paramiko.SFTPAttributes()
    attrs.st_mode = 0o600
    flags = proto.SFTP_FLAG_WRITE | proto.SFTP_FLAG_CREATE | proto.SFTP_FLAG_EXCL
    kind, msg = request(proto.CMD_OPEN, path, flags, attrs)
    if kind != proto.CMD_HANDLE:
        raise paramiko.SFTPError("Expected handle")
    return paramiko.SFTPFile(sftp, msg.get_binary(), "w")
