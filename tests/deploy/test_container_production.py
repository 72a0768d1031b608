"""Production that runs SGLang in a container: the unit's ``ExecStart=`` is ``docker run ...
IMAGE python -m sglang.launch_server --flags``, on the real systemd test host.

No container engine runs here (no daemon, no rootless runtime), so the engine is a stand-in on
the test host, ``/opt/engine/docker``: ``run [OPTIONS] IMAGE COMMAND...`` runs COMMAND with only
the variables named by ``-e`` (plus PATH and HOME), as a container sees its environment, and
logs each call. Held: the production unit is read as a container launcher (engine, options and
image kept word for word, only SGLang's flags change); the config's own environment reaches the
server through ``-e NAME`` (its value stays in the unit's ``Environment=``); the launcher is
asked through a throwaway container (``--rm``, without production's ``--name``); the host is
given back byte for byte. docs/topologies.md says what a real engine would add.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from helpers import child_pytest_argv, file_states, host_entry, save_inventory

from .conftest import Launcher, wait_for

SERVICE = "sglang-container.service"
UNIT = f"/etc/systemd/system/{SERVICE}"
OURS = f"/etc/systemd/system/{SERVICE}.d/zz-pytest-sglang.conf"
ENGINE = "/opt/engine/docker"
ENGINE_LOG = "/var/log/engine.log"
IMAGE = "lmsysorg/sglang:v0.5.23-cu129"

STAND_IN_ENGINE = r"""#!/bin/sh
# A stand-in container engine: run COMMAND with only the -e variables, as a container would.
[ "$1" = run ] || { echo "stand-in engine: only run" >&2; exit 2; }
shift
echo "run $*" >> /var/log/engine.log
set -- "$@"
keep="PATH=$PATH HOME=/root"
names=""
while [ $# -gt 0 ]; do
  case "$1" in
    -e|--env) case "$2" in
                *=*) keep="$keep $2" ;;
                *) keep="$keep $2=$(printenv "$2")"; names="$names $2" ;;
              esac; shift 2 ;;
    --name|-v|--volume|--gpus|-p|--publish|--network|--ipc|--shm-size|--restart) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
image="$1"; shift
echo "image $image env$names" >> /var/log/engine.log
exec env -i $keep "$@"
"""


def container_unit(python: str) -> str:
    return f"""[Unit]
Description=SGLang in a container (stand-in engine)
[Service]
Environment=SGLANG_SIM_STARTUP_SCALE=0 SGLANG_SIM_TIME_SCALE=0
ExecStart={ENGINE} run --rm --name sglang-prod --gpus all --ipc=host --network host \\
  -v /models:/models -e SGLANG_SIM_STARTUP_SCALE -e SGLANG_SIM_TIME_SCALE {IMAGE} \\
  {python} -m pytest_sglang.sim --model-path /models/prod --port 30000 --mem-fraction-static 0.8
[Install]
WantedBy=multi-user.target
"""


@pytest.fixture
def container_production(systemd_transport: Any, launcher: Launcher) -> Iterator[dict[str, str]]:
    t = systemd_transport
    python = launcher.launch.split()[0]
    t.check_output("mkdir -p /opt/engine")
    t.put(STAND_IN_ENGINE.encode(), ENGINE, mode=0o755)
    t.put(container_unit(python).encode(), UNIT, mode=0o644)
    t.check_output("systemctl daemon-reload && systemctl restart -- %s", SERVICE)
    wait_for(lambda: t.run("systemctl is-active --quiet -- %s", SERVICE).ok, "production up")
    yield file_states(t.run, [UNIT, OURS])
    t.run(
        "systemctl stop -- %s; rm -rf -- %s %s.d /opt/engine %s /var/lib/pytest-sglang; "
        "systemctl daemon-reload; systemctl reset-failed",
        SERVICE,
        UNIT,
        UNIT,
        ENGINE_LOG,
    )


SESSION = """
import pytest
from pytest_sglang import production

@pytest.mark.parametrize(
    "sglang_server",
    [production(mem_fraction_static=0.7, env={"PYTEST_SGLANG_FROM_CONFIG": "yes"})],
    indirect=True,
)
def test_tuned_in_the_container(sglang_server):
    assert sglang_server.server_args["mem_fraction_static"] == 0.7
    argv = sglang_server.plan.argv
    assert argv[:2] == ["/opt/engine/docker", "run"] and "--gpus" in argv
    image = argv.index("lmsysorg/sglang:v0.5.23-cu129")
    assert argv[image - 2 : image] == ["-e", "PYTEST_SGLANG_FROM_CONFIG"]
    assert argv[image + 2 : image + 4] == ["-m", "pytest_sglang.sim"]
"""


def test_a_containerised_production_unit_is_tuned_and_given_back(
    pytester: pytest.Pytester,
    systemd_host: Any,
    systemd_transport: Any,
    container_production: dict[str, str],
) -> None:
    t = systemd_transport
    entry = host_entry("prod", systemd_host, SERVICE, {}, launch="")  # the unit is the launcher
    inventory = save_inventory(pytester.path / "hosts.toml", entry)
    pytester.makepyfile(SESSION)
    argv = child_pytest_argv("--sglang-host", "prod", "--sglang-inventory", str(inventory))
    result = pytester.run(*argv, timeout=300)
    assert result.ret == 0, result.stdout.str()
    calls = t.check_output("cat %s", ENGINE_LOG).splitlines()
    runs = [c for c in calls if c.startswith("run ")]
    probes = [c for c in runs if "--help" in c or " -c " in c]
    assert probes and all("--rm" in c and "--name" not in c for c in probes), probes
    deployed = [c for c in runs if "--mem-fraction-static 0.7" in c]
    assert len(deployed) == 1 and "--name sglang-prod" in deployed[0], runs
    assert (
        f"image {IMAGE} env SGLANG_SIM_STARTUP_SCALE SGLANG_SIM_TIME_SCALE "
        "PYTEST_SGLANG_FROM_CONFIG" in calls
    ), calls
    wait_for(lambda: t.run("systemctl is-active --quiet -- %s", SERVICE).ok, "production back")
    assert file_states(t.run, [UNIT, OURS]) == container_production
    main = t.check_output("systemctl show -p MainPID --value -- %s", SERVICE).strip()
    cmdline = t.get(f"/proc/{main}/cmdline").decode().split("\0")
    assert (
        "--mem-fraction-static" in cmdline
        and cmdline[cmdline.index("--mem-fraction-static") + 1] == "0.8"
    )
