"""What the real SGLang 0.5.23 needs to resolve its arguments on a machine without a GPU.

Runs inside the conformance venv (real ``sglang==0.5.23``), never in the project's own venv.
Nothing here patches an SGLang function: SGLang's own code runs unchanged, and only what lies
*below* it is replaced, for the reasons given per piece:

- GPU-only kernel packages (:data:`GPU_ONLY_PACKAGES`) are imported at module import time by
  modules that ``sglang.srt.server_args`` pulls in, but argument resolution never calls them;
  they have no CPU wheels (or none for this Python). A meta-path finder answers exactly these
  names with permissive stub modules.
- The device: SGLang asks torch's CUDA API (``is_available``, ``device_count``,
  ``get_device_capability``, ``get_device_properties``, ``mem_get_info``, ...) for the GPU. The
  torch build is the real CUDA one; only these functions answer as the chosen profile's GPU.
- NVML (``pynvml``, from the ``nvidia-ml-py`` dependency): the driver's management library,
  which SGLang asks for compute capability and topology; :func:`_fake_nvml` answers from the
  profile (without a driver the real module fails at ``nvmlInit``).
- ``nvidia-smi``: SGLang reads the memory capacity and compute capability from it
  (``get_nvgpu_memory_capacity``); :func:`write_fake_nvidia_smi` puts a script on PATH that
  answers ``--query-gpu=...`` in CSV like the real tool.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import stat
import sys
import types
from dataclasses import dataclass
from typing import Any

__all__ = ["GPU_ONLY_PACKAGES", "GpuProfile", "install", "write_fake_nvidia_smi"]

#: Top-level packages that exist only as GPU builds and are imported (not called) on the
#: resolution path. Each name and its submodules resolve to stubs.
GPU_ONLY_PACKAGES = frozenset(
    {
        "sgl_kernel",
        "flashinfer",
        "deep_gemm",
        "sgl_deep_gemm",
        "flash_mla",
        "deep_ep",
        "triton_kernels",
        "quack",
        "cutlass",
        "cuda",
        "tilelang",
        "flash_attn",
        "nvshmem",
        "mooncake",
        "aiter",
        "vllm",
        "torch_memory_saver",
        "xgrammar",
        "outlines",
        "llguidance",
        "kernels",
        "nvidia_cutlass_dsl",
        "cuda_bindings",
    }
)


@dataclass(frozen=True)
class GpuProfile:
    """One host's GPUs as the driver reports them."""

    key: str
    name: str
    count: int
    total_mib: int
    capability: tuple[int, int]
    multi_processors: int
    driver: str = "580.95.05"


class _StubMeta(type):
    """Classes whose every attribute is another stub: usable as base class, decorator, value."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _stub_class(name)

    def __getitem__(cls, item: Any) -> Any:
        return cls

    def __or__(cls, other: Any) -> Any:
        return cls

    def __ror__(cls, other: Any) -> Any:
        return cls

    def __iter__(cls) -> Any:
        return iter(())


class _Stub(metaclass=_StubMeta):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]  # used as a decorator
        return _Stub()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _stub_class(name)


def _stub_class(name: str) -> Any:
    return _StubMeta(name, (_Stub,), {})


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _stub_class(name)


class _StubLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _StubModule(spec.name)
        module.__path__ = []  # a package: submodules resolve through the finder too
        module.__version__ = "0.0.0+stub"
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class _StubFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname.split(".", 1)[0] not in GPU_ONLY_PACKAGES:
            return None
        return importlib.machinery.ModuleSpec(fullname, _StubLoader(), is_package=True)


class _Props:
    def __init__(self, profile: GpuProfile) -> None:
        self.name = profile.name
        self.total_memory = profile.total_mib * 1024 * 1024
        self.major, self.minor = profile.capability
        self.multi_processor_count = profile.multi_processors
        self.L2_cache_size = 64 * 1024 * 1024
        self.is_integrated = False
        self.uuid = "GPU-00000000-0000-0000-0000-000000000000"
        self.warp_size = 32


def _fake_cuda(profile: GpuProfile) -> None:
    """torch.cuda's device queries answer as ``profile``'s GPUs (nothing is allocated)."""
    import torch

    cuda: Any = torch.cuda
    props = _Props(profile)
    total = props.total_memory
    cuda.is_available = lambda: True
    cuda.device_count = lambda: profile.count
    cuda.is_initialized = lambda: True
    cuda.current_device = lambda: 0
    cuda.get_device_capability = lambda device=None: profile.capability
    cuda.get_device_name = lambda device=None: profile.name
    cuda.get_device_properties = lambda device=None: props
    cuda.mem_get_info = lambda device=None: (total - 512 * 1024 * 1024, total)
    cuda.set_device = lambda device: None
    cuda.synchronize = lambda device=None: None
    cuda.empty_cache = lambda: None


class _NvmlError(Exception):
    pass


def _fake_nvml(profile: GpuProfile) -> types.ModuleType:
    """A ``pynvml`` module answering as ``profile``'s driver (only the calls SGLang makes)."""
    nvml: Any = types.ModuleType("pynvml")
    nvml.NVMLError = _NvmlError
    nvml.NVMLError_NotSupported = type("NVMLError_NotSupported", (_NvmlError,), {})
    nvml.NVML_P2P_STATUS_OK = 0
    nvml.NVML_P2P_CAPS_INDEX_NVLINK = 4
    nvml.NVML_AFFINITY_SCOPE_NODE = 0
    nvml.NVML_CC_SYSTEM_FEATURE_ENABLED = 1
    memory = types.SimpleNamespace(
        total=profile.total_mib * 1024 * 1024, free=profile.total_mib * 1024 * 1024, used=0
    )
    nvml.nvmlInit = lambda: None
    nvml.nvmlShutdown = lambda: None
    nvml.nvmlDeviceGetCount = lambda: profile.count
    nvml.nvmlDeviceGetHandleByIndex = lambda index: index
    nvml.nvmlDeviceGetCudaComputeCapability = lambda handle: profile.capability
    nvml.nvmlDeviceGetMemoryInfo = lambda handle: memory
    nvml.nvmlDeviceGetName = lambda handle: profile.name
    nvml.nvmlSystemGetDriverVersion = lambda: profile.driver
    # no NVLink on the PCIe profile: P2P over NVLink reported as not OK there
    nvlink = profile.capability != (12, 0)
    nvml.nvmlDeviceGetP2PStatus = lambda a, b, index: 0 if nvlink else 1

    def _not_supported(*args: Any, **kwargs: Any) -> Any:
        raise nvml.NVMLError_NotSupported("Not Supported")

    nvml.nvmlDeviceGetGpuFabricInfo = _not_supported
    nvml.nvmlDeviceGetGpuFabricInfoV = _not_supported
    nvml.nvmlSystemGetConfComputeState = _not_supported
    nvml.nvmlSystemGetConfComputeSettings = _not_supported
    nvml.nvmlDeviceGetMemoryAffinity = _not_supported
    return nvml


def write_fake_nvidia_smi(directory: str, profile: GpuProfile) -> str:
    """An ``nvidia-smi`` answering ``--query-gpu=a,b --format=csv[,noheader][,nounits]``."""
    values = {
        "memory.total": (f"{profile.total_mib}", f"{profile.total_mib} MiB"),
        "memory.used": ("0", "0 MiB"),
        "memory.free": (f"{profile.total_mib}", f"{profile.total_mib} MiB"),
        "compute_cap": (f"{profile.capability[0]}.{profile.capability[1]}",) * 2,
        "name": (profile.name, profile.name),
        "driver_version": (profile.driver, profile.driver),
        "index": ("{i}", "{i}"),
    }
    script = f"""#!{sys.executable}
import sys
VALUES = {values!r}
COUNT = {profile.count}
args = sys.argv[1:]
query = next((a.split("=", 1)[1] for a in args if a.startswith("--query-gpu=")), None)
fmt = next((a.split("=", 1)[1] for a in args if a.startswith("--format=")), "")
if query is None:
    print("NVIDIA-SMI (conformance fake): only --query-gpu is answered")
    sys.exit(0)
keys = [k.strip() for k in query.split(",")]
if any(k not in VALUES for k in keys):
    print("Field is not a valid field to query.", file=sys.stderr)
    sys.exit(2)
unit = 0 if "nounits" in fmt else 1
if "noheader" not in fmt:
    print(", ".join(keys))
for i in range(COUNT):
    print(", ".join(VALUES[k][unit].format(i=i) for k in keys))
"""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "nvidia-smi")
    with open(path, "w") as handle:
        handle.write(script)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def install(profile: GpuProfile, bin_dir: str) -> None:
    """Stub the kernel packages, fake the device, put the fake nvidia-smi first on PATH."""
    _fake_cuda(profile)  # imports the real torch first, before any stub exists
    sys.modules["pynvml"] = _fake_nvml(profile)
    sys.meta_path.insert(0, _StubFinder())
    write_fake_nvidia_smi(bin_dir, profile)
    os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(profile.count))
