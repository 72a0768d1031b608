"""The deployer registry: built-in names by dotted path, and backends an outside plugin adds.

The registry imports a backend only when a host uses it, and asks the
``pytest_sglang_deployer`` hook first (first answer wins), so a package of its own can add a
``docker`` backend, or replace a built-in one, without touching this one.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers import use_simulator_env

from pytest_sglang.errors import InventoryError
from pytest_sglang.lifecycle import deployers
from pytest_sglang.lifecycle.process import ProcessDeployer
from pytest_sglang.lifecycle.spec import HostSpec
from pytest_sglang.transport.local import LocalTransport


class Custom(ProcessDeployer):
    """A backend from outside the package."""


@pytest.fixture
def lookup() -> Iterator[dict[str, object]]:
    """Answers the registry asks for, as a plugin's hook would give them."""
    answers: dict[str, object] = {}
    before = deployers.lookup()
    deployers.set_lookup(lambda name: answers.get(name))  # type: ignore[arg-type, return-value]
    yield answers
    deployers.set_lookup(before)


def spec(deployer: str) -> HostSpec:
    return HostSpec(name="gpu", kind="local", launch="/py", deployer=deployer, source="hosts.toml")


def test_a_built_in_name_is_imported_from_its_dotted_path() -> None:
    assert deployers.backend("process", "here") is ProcessDeployer
    assert deployers.is_known("systemd") and not deployers.is_known("docker")


def test_a_plugin_adds_a_backend_by_class_or_by_path(lookup: dict[str, object]) -> None:
    lookup["custom"] = Custom
    lookup["by-path"] = f"{__name__}:Custom"
    assert isinstance(deployers.make_deployer(spec("custom"), LocalTransport()), Custom)
    assert deployers.backend("by-path", "here") is Custom
    assert deployers.is_known("custom")


def test_a_plugin_answers_before_the_built_in_table(lookup: dict[str, object]) -> None:
    lookup["process"] = Custom
    assert deployers.backend("process", "here") is Custom


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (
            "no.such.module:X",
            "host 'gpu' in hosts.toml: deployer 'odd': cannot import no.such.module:X: "
            "No module named 'no'",
        ),
        (
            f"{__name__}:spec",
            "host 'gpu' in hosts.toml: deployer 'odd' is not a Deployer subclass: <function spec",
        ),
    ],
)
def test_a_wrong_answer_is_one_line_naming_the_host_and_the_name(
    lookup: dict[str, object], answer: str, message: str
) -> None:
    lookup["odd"] = answer
    with pytest.raises(InventoryError) as info:
        deployers.make_deployer(spec("odd"), LocalTransport())
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


PLUGIN = """
import pytest
from pytest_sglang.lifecycle.process import ProcessDeployer

class Recording(ProcessDeployer):
    def deploy(self, plan):
        with open("deployed-by-plugin.txt", "a") as out:
            out.write(plan.config.id + "\\n")
        return super().deploy(plan)

def pytest_sglang_deployer(name):
    return Recording if name == "process" else None
"""

ONE_TEST = """
import pytest
from pytest_sglang import ServerConfig

@pytest.mark.parametrize(
    "sglang_server", [ServerConfig(model_path="/models/Qwen3-8B", name="plugged")], indirect=True
)
def test_ready(sglang_server):
    assert type(sglang_server.deployer).__name__ == "Recording"
"""


def test_a_plugin_backend_deploys_a_session(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_simulator_env(monkeypatch)
    pytester.makeconftest(PLUGIN)
    pytester.makepyfile(ONE_TEST)
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    assert (pytester.path / "deployed-by-plugin.txt").read_text() == "plugged\n"
