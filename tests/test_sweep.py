"""sweep() and configs loaded from YAML, TOML and JSON files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_sglang import ConfigError, ServerConfig, load_configs, sweep

BASE = ServerConfig(
    model_path="/shared/models/Qwen3.5-122B-A10B",
    served_model_name="qwen3.5-122b",
    speculative_algorithm="EAGLE",
    speculative_num_steps=1,
    speculative_eagle_topk=1,
)


def test_sweep_is_the_cartesian_product_with_ids() -> None:
    configs = sweep(BASE, speculative_num_steps=[1, 2], tp_size=[2, 4])
    assert [c.id for c in configs] == [
        "eagle-s1-k1-tp2",
        "eagle-s1-k1-tp4",
        "eagle-s2-k1-tp2",
        "eagle-s2-k1-tp4",
    ]
    assert all(c.served_model_name == "qwen3.5-122b" for c in configs)


def test_sweep_with_a_named_base_labels_each_point() -> None:
    configs = sweep(BASE.replace(name="qwen"), speculative_num_steps=[1, 2])
    assert [c.id for c in configs] == ["qwen-s1", "qwen-s2"]


def test_sweep_validates_each_point() -> None:
    with pytest.raises(ConfigError, match="speculative_num_steps"):
        sweep(BASE, speculative_num_steps=[1, 0])


@pytest.mark.parametrize(
    ("axes", "words"),
    [
        ({"no_such_field": [1]}, "'no_such_field' is not a ServerConfig field"),
        ({"tp_size": []}, "tp_size has no values"),
        ({"tp_size": 4}, "tp_size must be a list"),
    ],
)
def test_bad_sweep_axes(axes: dict[str, object], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        sweep(BASE, **axes)  # type: ignore[arg-type]


def test_sweep_ids_become_test_ids(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest
        from pytest_sglang import ServerConfig, sweep

        BASE = ServerConfig(model_path="m", speculative_algorithm="EAGLE",
                            speculative_num_steps=1, speculative_eagle_topk=1)

        @pytest.mark.parametrize("cfg", sweep(BASE, speculative_num_steps=[1, 2, 3]))
        def test_it(cfg):
            assert cfg.resolved().speculative_num_draft_tokens == cfg.speculative_num_steps + 1
        """
    )
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*test_it?eagle-s1-k1? PASSED*", "*test_it?eagle-s3-k1? PASSED*"])


YAML = """
base:
  model_path: /shared/models/Qwen3.5-122B-A10B
  served_model_name: qwen3.5-122b
  tp_size: 4
  speculative_algorithm: EAGLE
  speculative_eagle_topk: 1
  speculative_num_steps: 1
  files:
    /opt/moe/E=256.json: kernels/E=256.json
sweep:
  speculative_num_steps: [1, 2, 3, 4]
"""

TOML = """
[[configs]]
model_path = "/m/a"
tp_size = 2

[[configs]]
model_path = "/m/b"
env = { HF_HUB_OFFLINE = "1" }
"""


def test_load_yaml_sweep_with_relative_file_sources(tmp_path: Path) -> None:
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "E=256.json").write_text("{}")
    path = tmp_path / "sweep.yaml"
    path.write_text(YAML)
    configs = load_configs(path)
    assert [c.speculative_num_steps for c in configs] == [1, 2, 3, 4]
    assert configs[0].files["/opt/moe/E=256.json"].data() == b"{}"


def test_load_toml_list(tmp_path: Path) -> None:
    path = tmp_path / "configs.toml"
    path.write_text(TOML)
    configs = load_configs(path)
    assert [c.model_path for c in configs] == ["/m/a", "/m/b"]
    assert configs[1].env == {"HF_HUB_OFFLINE": "1"}


def test_load_json_single_and_list(tmp_path: Path) -> None:
    one = tmp_path / "one.json"
    one.write_text(json.dumps({"model_path": "/m/a", "port": 30001}))
    assert load_configs(one)[0].port == 30001
    many = tmp_path / "many.json"
    many.write_text(json.dumps([{"model_path": "/m/a"}, {"model_path": "/m/b"}]))
    assert len(load_configs(many)) == 2


@pytest.mark.parametrize(
    ("name", "text", "words"),
    [
        ("bad.json", "{not json", "not valid JSON"),
        ("bad.toml", "x = ", "not valid TOML"),
        ("bad.yaml", "a: [", "not valid YAML"),
        ("port.json", '{"model_path": "m", "port": 0}', "port: must be >= 1"),
        ("list.json", '[{"model_path": "m"}, {"port": 1}]', "config #2"),
        ("keys.json", '{"configs": [], "extra": 1}', "unknown top-level key"),
        ("conf.ini", "[x]", "unknown config file type"),
        ("empty.json", '{"configs": []}', "no configs"),
    ],
)
def test_bad_files_name_the_file_and_the_problem(
    tmp_path: Path, name: str, text: str, words: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_configs(path)
    assert name in str(info.value)
    assert words in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nothere\.yaml: cannot read"):
        load_configs(tmp_path / "nothere.yaml")
