"""The baseline store and the fingerprint probes, on real files and a real local shell."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from pytest_sglang.baseline.fingerprint import (
    LIBRARY_PACKAGES,
    diff_fingerprints,
    fingerprint_digest,
    gpu_facts,
    hardware_of,
    library_versions,
    model_config_sha256,
    software_changes,
)
from pytest_sglang.baseline.store import BaselineError, BaselineKey, BaselineStore, round_stats
from pytest_sglang.transport.local import LocalTransport

KEY = BaselineKey("eagle-s2-k1", "0123456789abcdef", "single-stream", "fp0123456789abcd")


def entry(value: float) -> dict[str, object]:
    return {
        "group": None,
        "name": "test_decode[eagle-s2-k1]",
        "fullname": "test_x.py::test_decode[eagle-s2-k1]",
        "params": None,
        "param": None,
        "options": {},
        "stats": round_stats([0.1, 0.12]),
        "extra_info": {
            "output_throughput": value,
            "rounds_values": {"output_throughput": [value, value + 1]},
        },
    }


def test_save_keeps_every_run_in_pytest_benchmark_format(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path, history=2)
    for value in (10.0, 20.0, 30.0):
        path = store.save(KEY, {"gpu_name": "X"}, entry(value), version="5.3.1")
    assert path == tmp_path / "eagle-s2-k1-0123456789ab" / "single-stream" / "fp0123456789abcd.json"
    data = json.loads(path.read_text())
    assert data["machine_info"]["sglang_fingerprint"] == {"gpu_name": "X"}
    assert [b["extra_info"]["output_throughput"] for b in data["benchmarks"]] == [10.0, 20.0, 30.0]
    assert {"min", "max", "mean", "stddev", "rounds", "median", "iqr", "ops"} <= set(
        data["benchmarks"][0]["stats"]
    )
    stored = store.load(KEY)
    assert stored is not None
    # a gate compares with the last `history` runs; the file keeps them all
    assert stored.latest(store.history).values("output_throughput") == [20.0, 21.0, 30.0, 31.0]
    assert stored.values("median_ttft_ms") == []


def test_settings_are_kept_per_file_until_a_run_brings_new_ones(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    store.save(KEY, {"gpu_name": "X"}, entry(1.0), settings={"chunked_prefill_size": 8192})
    store.save(KEY, {"gpu_name": "X"}, entry(2.0))  # a save without settings keeps them
    stored = store.load(KEY)
    assert stored is not None and stored.settings == {"chunked_prefill_size": 8192}
    store.save(KEY, {"gpu_name": "X"}, entry(3.0), settings={"chunked_prefill_size": 4096})
    stored = store.load(KEY)
    assert stored is not None and stored.settings == {"chunked_prefill_size": 4096}
    assert len(stored.runs) == 3


def test_others_finds_the_same_config_on_another_fingerprint(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    store.save(KEY, {"gpu_name": "A"}, entry(1.0))
    other = BaselineKey(KEY.config_id, KEY.config_digest, KEY.workload, "another")
    assert store.load(other) is None
    [found] = store.others(other)
    assert found.fingerprint == {"gpu_name": "A"}


def test_unreadable_baseline_is_one_line(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    path = store.path(KEY)
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    with pytest.raises(BaselineError, match=r"cannot read it .*fix or delete the file") as info:
        store.load(KEY)
    assert "\n" not in str(info.value)


def test_fingerprint_digest_and_diff() -> None:
    a = {"gpu_name": "H100", "sglang_version": "0.5.23"}
    b = {"sglang_version": "0.5.18", "gpu_name": "H100"}
    assert fingerprint_digest(a) == fingerprint_digest(dict(reversed(a.items())))
    assert fingerprint_digest(a) != fingerprint_digest(b)
    assert diff_fingerprints(a, b) == ["sglang_version '0.5.23' (baseline '0.5.18')"]


FAKE_NVIDIA_SMI = """#!/bin/sh
if [ "$1" = "--query-gpu=name,driver_version" ]; then
  echo "NVIDIA H100 80GB HBM3, 550.54.15"
  echo "NVIDIA H100 80GB HBM3, 550.54.15"
  exit 0
fi
echo "| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4     |"
"""


def test_gpu_facts_from_nvidia_smi_over_a_transport(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = tmp_path / "nvidia-smi"
    tool.write_text(FAKE_NVIDIA_SMI)
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    facts = gpu_facts(LocalTransport())
    assert facts == {
        "gpu_name": "NVIDIA H100 80GB HBM3",
        "gpu_count": 2,
        "driver": "550.54.15",
        "cuda": "12.4",
    }


def test_no_gpu_tools_give_empty_facts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "sh").symlink_to(shutil.which("sh") or "/bin/sh")
    monkeypatch.setenv("PATH", str(tmp_path))  # a shell, but neither nvidia-smi nor nvcc
    assert gpu_facts(LocalTransport()) == {"gpu_name": "", "gpu_count": 0, "driver": "", "cuda": ""}


def test_model_config_hash(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"hidden_size": 4096}')
    expected = hashlib.sha256(b'{"hidden_size": 4096}').hexdigest()
    assert model_config_sha256(LocalTransport(), str(tmp_path)) == expected
    assert model_config_sha256(LocalTransport(), str(tmp_path / "nope")) == "absent"


def test_software_changes_are_an_upgrade_and_anything_else_is_not() -> None:
    old = {"gpu_name": "H100", "gpu_count": 8, "sglang_version": "0.5.22", "driver": "550.54"}
    new = {**old, "sglang_version": "0.5.23", "torch_version": "2.9.1"}
    assert software_changes(new, old) == [
        ("sglang_version", "0.5.22", "0.5.23"),
        ("torch_version", None, "2.9.1"),
    ]
    assert software_changes(old, old) == []
    assert software_changes({**new, "gpu_count": 4}, old) is None
    assert software_changes({**new, "kernel": "6.8"}, old) is None  # a hook's field: not judged
    assert hardware_of(new) == {"gpu_name": "H100", "gpu_count": 8}


def test_library_versions_from_the_launcher_python_metadata() -> None:
    found = library_versions(LocalTransport(), sys.executable)
    assert set(found) <= set(LIBRARY_PACKAGES)
    assert all(found.values())  # a package that is not installed is left out, not ""
    assert library_versions(LocalTransport(), "/nonexistent/python3") == {}
