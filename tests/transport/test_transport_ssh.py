"""SshTransport against the real systemd + sshd test host: no mocks, real failures."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import HOSTILE
from testhost import SystemdTestHost

from pytest_sglang.errors import CommandTimeout, ConnectError, HostKeyError, TransportError
from pytest_sglang.transport import SshTransport


def transport_to(host: SystemdTestHost, **kw: object) -> SshTransport:
    options: dict[str, object] = {
        "user": "root",
        "key_filename": host.key_path,
        "known_hosts": host.known_hosts_path,
        "connect_timeout": 5.0,
    }
    options.update(kw)
    return SshTransport(host.ip, **options)  # type: ignore[arg-type]


def host_fingerprint(host: SystemdTestHost, tmp_path: Path) -> str:
    pub = tmp_path / "hostkey.pub"
    pub.write_text(host.host_key_pub + "\n")
    out = subprocess.run(["ssh-keygen", "-lf", str(pub)], capture_output=True, text=True)
    return out.stdout.split()[1]  # "256 SHA256:... comment (ED25519)"


@pytest.fixture
def ssh(systemd_transport: SshTransport) -> SshTransport:
    return systemd_transport


def test_run_returns_status_and_both_streams(ssh: SshTransport) -> None:
    result = ssh.run("echo out; echo err >&2; printf 'ü✓'; exit 3")
    assert (result.rc, result.stdout, result.stderr) == (3, "out\nü✓", "err\n")
    assert ssh.check_output("hostname").strip().startswith("sgl")
    assert ssh.name.startswith("ssh://root@10.200.")


def test_hostile_arguments_reach_remote_argv_unchanged(
    ssh: SshTransport, systemd_host: SystemdTestHost
) -> None:
    result = ssh.run("printf '%%s\\0' %s %s %s %s %s %s %s %s %s", *HOSTILE)
    assert result.ok, result.stderr
    assert result.stdout.split("\0")[:-1] == HOSTILE
    assert systemd_host.ssh("test -e /tmp/pwned-by-quoting").returncode == 1


def test_timeout_raises_and_the_connection_stays_usable(ssh: SshTransport) -> None:
    started = time.monotonic()
    with pytest.raises(CommandTimeout, match=r"ssh://root@10\.200\..*1s timeout") as info:
        ssh.run("sleep 30", timeout=1)
    assert time.monotonic() - started < 15
    assert "\n" not in str(info.value)
    assert ssh.check_output("echo %s", "still here") == "still here\n"


def test_put_mode_is_set_before_the_file_appears(
    ssh: SshTransport, systemd_host: SystemdTestHost
) -> None:
    data = b"TOKEN=s3cret\n" + bytes(range(256)) * 200
    ssh.put(data, "/root/secret.env", mode=0o600)
    assert systemd_host.ssh("stat -c %a /root/secret.env").stdout.strip() == "600"
    assert ssh.get("/root/secret.env") == data
    ssh.put(b"#!/bin/sh\necho hi\n", "/root/secret.env", mode=0o755)  # replaces it
    assert systemd_host.ssh("/root/secret.env").stdout == "hi\n"
    assert systemd_host.ssh("ls -A /root | grep -c tmp").stdout.strip() == "0"


def test_file_errors_name_host_and_path(ssh: SshTransport) -> None:
    with pytest.raises(FileNotFoundError, match=r"no such file.*/root/absent"):
        ssh.get("/root/absent")
    with pytest.raises(TransportError, match=r"ssh://.*cannot write /no/such/dir/f \(") as info:
        ssh.put(b"x", "/no/such/dir/f")
    assert "\n" not in str(info.value)


def test_put_onto_a_full_disk_fails_and_keeps_the_old_file(ssh: SshTransport) -> None:
    full = "/opt/transport-full"
    ssh.check_output(
        "mkdir -p %s && mount -t tmpfs -o size=8k tmpfs %s && echo original > %s/k.json",
        full,
        full,
        full,
    )
    try:
        with pytest.raises(TransportError, match=r"file system full\?"):
            ssh.put(b"x" * 64 * 1024, f"{full}/k.json")
        assert ssh.get(f"{full}/k.json") == b"original\n"
        assert ssh.check_output("ls -A %s", full).split() == ["k.json"]
    finally:
        ssh.run("umount %s; rmdir %s", full, full)


def test_forward_reaches_a_server_bound_to_the_hosts_loopback(
    ssh: SshTransport, systemd_host: SystemdTestHost
) -> None:
    unit = "sgl-test-http"
    systemd_host.ssh(
        f"systemd-run --unit={unit} --working-directory=/etc "
        "python3 -m http.server 8123 --bind 127.0.0.1",
        check=True,
    )
    try:
        with ssh.forward(8123) as fwd:  # type: ignore[attr-defined]
            body = _get_with_retry(f"http://127.0.0.1:{fwd.local_port}/hostname")
            assert body.decode().strip() == systemd_host.name
            # several connections at once go through their own channels
            bodies = _parallel_gets(f"http://127.0.0.1:{fwd.local_port}/hostname", 4)
            assert {b.decode().strip() for b in bodies} == {systemd_host.name}
            port = fwd.local_port
        with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
            pass
    finally:
        systemd_host.ssh(f"systemctl stop {unit}")


def _get_with_retry(url: str) -> bytes:
    deadline = time.monotonic() + 15
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return bytes(response.read())
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _parallel_gets(url: str, n: int) -> list[bytes]:
    results: list[bytes] = []
    threads = [
        threading.Thread(target=lambda: results.append(_get_with_retry(url))) for _ in range(n)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    return results


def test_unknown_host_key_is_refused_with_fingerprint_and_fix(
    systemd_host: SystemdTestHost, tmp_path: Path
) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    with pytest.raises(HostKeyError) as info, transport_to(systemd_host, known_hosts=empty) as t:
        t.run("true")
    message = str(info.value)
    assert host_fingerprint(systemd_host, tmp_path) in message
    assert f"ssh-keyscan -p 22 {systemd_host.ip} >> {empty}" in message
    assert "\n" not in message
    # accept-new semantics without strict checking: the connection works, nothing is saved
    with transport_to(systemd_host, known_hosts=empty, strict_host_keys=False) as t:
        assert t.run("true").ok
    assert empty.read_text() == ""


def test_changed_host_key_is_refused(systemd_host: SystemdTestHost, tmp_path: Path) -> None:
    other = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    known = tmp_path / "known_hosts"
    known.write_text(f"{systemd_host.ip} {other.with_suffix('.pub').read_text()}")
    for strict in (True, False):
        t = transport_to(systemd_host, known_hosts=known, strict_host_keys=strict)
        with pytest.raises(HostKeyError, match=r"host key CHANGED") as info:
            t.run("true")
        assert host_fingerprint(systemd_host, tmp_path) in str(info.value)
        assert "\n" not in str(info.value)


def test_missing_known_hosts_file_is_refused(systemd_host: SystemdTestHost, tmp_path: Path) -> None:
    with pytest.raises(HostKeyError, match=r"known_hosts file .* does not exist.*ssh-keyscan"):
        transport_to(systemd_host, known_hosts=tmp_path / "nope").run("true")


def test_wrong_key_fails_authentication_in_one_line(
    systemd_host: SystemdTestHost, tmp_path: Path
) -> None:
    wrong = tmp_path / "wrong"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(wrong)], check=True)
    t = transport_to(systemd_host, key_filename=wrong)
    with pytest.raises(ConnectError) as info:
        t.run("true")
    assert str(info.value) == (
        f"ssh://root@{systemd_host.ip}:22: authentication failed (key {wrong} refused); "
        "check identity/user"
    )
    with pytest.raises(ConnectError, match=r"identity file .* not found"):
        transport_to(systemd_host, key_filename=tmp_path / "absent").run("true")
    (tmp_path / "hostkey.pub").write_text(systemd_host.host_key_pub)
    with pytest.raises(ConnectError, match=r"identity file .*/hostkey.pub is not a usable private"):
        transport_to(systemd_host, key_filename=tmp_path / "hostkey.pub").run("true")
    encrypted = tmp_path / "encrypted"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "pw", "-f", str(encrypted)], check=True
    )
    with pytest.raises(ConnectError, match=r"is encrypted and passphrases are never prompted"):
        transport_to(systemd_host, key_filename=encrypted).run("true")


def test_connect_errors_are_bounded_and_one_line(systemd_host: SystemdTestHost) -> None:
    started = time.monotonic()
    with pytest.raises(ConnectError, match=r"refused.*port 2222") as info:
        transport_to(systemd_host, port=2222, connect_timeout=2.0).run("true")
    assert "\n" not in str(info.value)
    # a port that accepts but never speaks SSH: the banner wait is bounded too
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        port = silent.getsockname()[1]
        t = SshTransport("127.0.0.1", port=port, user="root", connect_timeout=1.0)
        with pytest.raises(ConnectError, match=r"handshake failed within 1s") as info:
            t.run("true")
        assert "\n" not in str(info.value)
    assert time.monotonic() - started < 20


def test_dropped_connection_fails_the_running_command_then_reconnects(
    systemd_host: SystemdTestHost,
) -> None:
    t = transport_to(systemd_host, keepalive=1)
    assert t.run("true").ok
    outcome: list[BaseException | object] = []

    def long_command() -> None:
        try:
            outcome.append(t.run("sleep 29.7; echo finished", timeout=25))
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=long_command)
    worker.start()
    # Kill the sshd processes serving that session (not the listener, not other sessions).
    kill = (
        "for i in $(seq 100); do p=$(pgrep -f 'sleep 29.7' | head -1); [ -n \"$p\" ] && break; "
        'sleep 0.05; done; [ -n "$p" ] || exit 3; '
        "while [ \"$p\" -gt 1 ]; do pp=$(awk '{print $4}' /proc/$p/stat); "
        '[ "$(cat /proc/$p/comm)" = sshd ] && [ "$pp" != 1 ] && kill -9 $p; p=$pp; done'
    )
    assert systemd_host.ssh(kill).returncode == 0
    worker.join(timeout=20)
    assert not worker.is_alive()
    (error,) = outcome
    assert isinstance(error, TransportError), error
    assert not isinstance(error, CommandTimeout)
    message = str(error)
    assert f"ssh://root@{systemd_host.ip}:22" in message
    assert "connection lost" in message and "not re-run" in message
    assert "\n" not in message
    assert t.check_output("echo %s", "again") == "again\n"  # one reconnect, transparently
    t.close()


class _Relay:
    """A loopback TCP relay to the host's sshd whose first connection can be cut unnoticed.

    Once cut, that connection relays nothing back and answers the client's next packet with a
    reset: the client's transport looks alive until its next write, as after a drop while idle.
    """

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.cut = threading.Event()
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.accepted += 1
            upstream = socket.create_connection(self.target)
            first = self.accepted == 1
            threading.Thread(target=self._pipe, args=(client, upstream, first), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, False), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, cuttable: bool) -> None:
        while True:
            try:
                data = src.recv(65536)
                if not data:
                    break
                if cuttable and self.cut.is_set():
                    src.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
                    break
                dst.sendall(data)
            except OSError:
                break
        for end in (src, dst):
            with contextlib.suppress(OSError):
                end.close()

    def close(self) -> None:
        self.listener.close()


def test_connection_dropped_while_idle_is_reopened_by_the_next_file_operation(
    systemd_host: SystemdTestHost, tmp_path: Path
) -> None:
    # The next file operation finds the dead connection only when its SFTP channel request is
    # refused by a reset. It did nothing yet on the host, so it opens a new connection instead.
    relay = _Relay((systemd_host.ip, 22))
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{relay.port} {systemd_host.host_key_pub}\n")
    t = SshTransport(
        "127.0.0.1", port=relay.port, user="root", key_filename=systemd_host.key_path,
        known_hosts=str(known), connect_timeout=5.0,
    )  # fmt: skip
    try:
        assert t.run("true").ok
        relay.cut.set()
        t.put(b"after the drop\n", "/tmp/sgl-idle-drop")
        assert systemd_host.ssh("cat /tmp/sgl-idle-drop").stdout == "after the drop\n"
        assert (t.connects, relay.accepted) == (2, 2)
    finally:
        t.close()
        relay.close()


def test_sudo_wraps_commands_and_files(systemd_host: SystemdTestHost) -> None:
    # No sudo on the image: a stand-in that drops "-n" and execs the rest shows what we send.
    systemd_host.ssh(
        'printf \'#!/bin/sh\\n[ "$1" = -n ] || exit 9\\nshift\\necho "$@" >> /tmp/sudo.log\\n'
        'exec "$@"\\n\' > /usr/local/bin/sudo && chmod 755 /usr/local/bin/sudo',
        check=True,
    )
    try:
        with transport_to(systemd_host, sudo=True) as t:
            assert (
                t.run("printf '%%s\\0' %s %s", *HOSTILE[:2]).stdout.split("\0")[:-1]
                == (HOSTILE[:2])
            )
            t.put(b"root only\n", "/etc/sgl-sudo-test", mode=0o640)
            assert systemd_host.ssh("stat -c %a /etc/sgl-sudo-test").stdout.strip() == "640"
            assert t.get("/etc/sgl-sudo-test") == b"root only\n"
            with pytest.raises(FileNotFoundError):
                t.get("/etc/sgl-absent")
            assert systemd_host.ssh("ls /tmp | grep -c pytest-sglang").stdout.strip() == "0"
        assert systemd_host.ssh("grep -c '^sh -c' /tmp/sudo.log").stdout.strip() != "0"
    finally:
        systemd_host.ssh("rm -f /usr/local/bin/sudo /tmp/sudo.log /etc/sgl-sudo-test")


def test_proxy_jump_through_one_host(systemd_host: SystemdTestHost, tmp_path: Path) -> None:
    # Jump to the host, then from there to its own sshd on 127.0.0.1 (not reachable from here).
    known = tmp_path / "known_hosts"
    known.write_text(
        f"{systemd_host.ip} {systemd_host.host_key_pub}\n127.0.0.1 {systemd_host.host_key_pub}\n"
    )
    with transport_to(systemd_host, known_hosts=known) as jump:
        via = SshTransport(
            "127.0.0.1",
            user="root",
            key_filename=systemd_host.key_path,
            known_hosts=known,
            proxy_jump=jump,
            connect_timeout=5.0,
        )
        with via:
            assert via.run("echo $SSH_CONNECTION").stdout.split()[0] == "127.0.0.1"
    spec = SshTransport(
        "127.0.0.1",
        user="root",
        key_filename=systemd_host.key_path,
        known_hosts=known,
        proxy_jump=f"root@{systemd_host.ip}:22",
    )
    with spec:
        assert spec.check_output("hostname").strip() == systemd_host.name
    bad = SshTransport(
        "127.0.0.1",
        port=2222,
        user="root",
        key_filename=systemd_host.key_path,
        known_hosts=known,
        proxy_jump=f"root@{systemd_host.ip}",
    )
    with pytest.raises(ConnectError, match=r"jump host .* cannot reach 127\.0\.0\.1:2222"), bad:
        bad.run("true")


@pytest.fixture
def second_host(systemd_host_factory: object) -> Iterator[SystemdTestHost]:
    yield systemd_host_factory("b")  # type: ignore[operator]


def test_two_hosts_side_by_side(
    systemd_host: SystemdTestHost, second_host: SystemdTestHost
) -> None:
    assert systemd_host.ip != second_host.ip
    with transport_to(systemd_host) as a, transport_to(second_host) as b:
        assert a.check_output("hostname").strip() == systemd_host.name
        assert b.check_output("hostname").strip() == second_host.name
