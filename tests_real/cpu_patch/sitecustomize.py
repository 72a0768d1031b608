"""The real-SGLang tier's one patch: run PyPI's SGLang on a machine without a GPU.

What: when ``sgl_kernel.load_utils`` is imported, its ``_load_architecture_specific_ops`` is
wrapped so that the ``ImportError`` it raises when no compiled ops library loads becomes "no
compiled ops" (``None``). Nothing else is touched, and no file of the package is edited.

Why: PyPI's ``sglang-kernel`` is a CUDA build. SGLang's CPU path imports its Python wrappers at
module load (e.g. ``sglang/kernels/ops/kvcache/cache_move.py`` imports from ``sgl_kernel``), and
``sgl_kernel/__init__.py`` loads ``common_ops`` first: without ``libcuda.so.1`` that raises
``ImportError: [sgl_kernel] CRITICAL: Could not load any common_ops library!`` during argument
resolution and the server dies. SGLang's CPU build of sgl-kernel (built from source; not on the
package index) would remove the need.

What it changes: SGLang finds no AMX kernels (it says so: "The current platform does not support
Intel AMX, will fallback to torch_native backend.") and every layer takes its plain PyTorch
``forward_native`` path. Model classes that touch ``torch.ops.sgl_kernel.*_cpu`` at import are
skipped by SGLang's model registry (``Ignore import error when loading sglang.srt.models.<name>``
lines in the log); ``LlamaForCausalLM``, the tier's model, is not among them.

How it is active only in the tier: this file is a ``sitecustomize`` module, which Python imports
at start-up from ``sys.path``; the tier puts this directory on ``PYTHONPATH`` in the environment
of the servers it starts (and of their scheduler and detokenizer processes, which inherit it).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from typing import Any

_TARGET = "sgl_kernel.load_utils"


class _PatchLoader(importlib.abc.Loader):
    """Runs the real loader, then wraps the ops loader of the module it made."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        return self._inner.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._inner.exec_module(module)
        real = module._load_architecture_specific_ops

        def load_or_none() -> Any:
            try:
                return real()
            except ImportError:
                return None  # no compiled ops: SGLang's CPU path uses forward_native

        module._load_architecture_specific_ops = load_or_none


class _PatchFinder(importlib.abc.MetaPathFinder):
    """Finds ``sgl_kernel.load_utils`` the normal way and hands it to :class:`_PatchLoader`."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != _TARGET:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _PatchLoader(spec.loader)
        return spec


sys.meta_path.insert(0, _PatchFinder())
