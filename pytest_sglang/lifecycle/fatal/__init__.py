"""The failure classifier: why a start that will not come up failed, from its log lines alone.

A pure function of the lines (no process, no clock), so the readiness wait, the journal's
verification and the failure corpus's tests all read a record the same way. Its modules, in the
order data flows through them (each imports only those before it):

- :mod:`.patterns`: the rules, which words on a line name which cause (a leaf);
- :mod:`.lines`: a line as SGLang wrote it, without a carrier's tag, colours, a group's gutter or
  the timestamp;
- :mod:`.tracebacks`: a traceback's structure (frames, the exception line, continuations,
  chains) and :func:`traceback_complete`;
- :mod:`.logged_settings`: what the logged ``server_args`` say about a crash (a flag missing,
  two choices that clash, GPUs asked for);
- :mod:`.config_file`: a failure while SGLang reads the ``--config`` file, the file's (or, where
  the merger reads flags, the flags');
- :mod:`.environment`: an environment variable the interpreter or a library refuses, the
  environment's;
- :mod:`.service_manager`: systemd's own lines in a unit's journal (a step it failed at before
  the server ran, the signal that ended its process);
- :mod:`.sandbox`: what the process's sandbox and limits deny the server (a read-only file
  system, no temporary directory, the open-file limit, ``/proc`` hidden), the unit's;
- :mod:`.shadowing`: a module the server imports shadowed by a stray file of the same name
  earlier on the path (the working directory under ``python -m``), the file named;
- :mod:`.hub_cache`: a model path that names a folder of the Hugging Face hub's cache (the
  model's cache folder, its ``snapshots`` or ``blobs``) rather than a model, the id to give;
- :mod:`.packages`: a package missing that SGLang does not install, and the logged setting that
  asked for it;
- :mod:`.features`: the features the logged settings turned on (against SGLang's defaults), and
  a failure raised in one's own code;
- :mod:`.placement`: where an exception no rule names lands, by its frames, type and phase;
- :mod:`.words`: the family a crash's own words name, when nothing above does (the last reading);
- :mod:`.reading`: :func:`find_fatal`, the entry point, and :class:`Fatal`, its answer.
"""

from __future__ import annotations

from .patterns import FATAL_PATTERNS
from .reading import Fatal, find_fatal
from .tracebacks import traceback_complete

__all__ = ["FATAL_PATTERNS", "Fatal", "find_fatal", "traceback_complete"]
