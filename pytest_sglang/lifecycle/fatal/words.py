"""What a crash's own words say of its family, when no rule, frame or phase names it.

An engineer who meets an error message no one has shown them still reads its words: a
``RuntimeError`` that talks of ``UCX`` or ``collectives`` is the communication layer, one that
talks of ``ptxas`` or a build is a compile, one that quotes a ``--flag`` or says a value is ``not
supported`` is the config. :data:`FAMILY_WORDS` is that reading, one family per entry, in the
order an engineer weighs them (memory, a value over a maximum the config sets, a compile, the
install, the communication layer, the device, the config, the weights, the tokenizer, a model
not where the path points). It is
the classifier's last reading, applied only to a cause it would otherwise call a bare
*crashed*: every rule of :mod:`.patterns`, every frame and every phase of :mod:`.placement`
outranks it, since they say more.

Not for a fault of the code: an ``AttributeError``, a ``TypeError``, a ``NameError``, an
``IndexError`` or ``KeyError`` and an ``AssertionError`` name the code's own mistake (a missing
attribute, a call that does not fit, an internal check), whatever words their message quotes
(``Cache flush failed after updating weights`` is no weight loading), and neither does a
library's report of its own bug (:data:`.patterns._CODE_FAULT`).
"""

from __future__ import annotations

import re

from .patterns import _CODE_FAULT

#: Exception types whose message is the code's own mistake, never the family of the failure.
_CODE_MISTAKE = re.compile(
    r"^([\w.]+\.)?(AttributeError|TypeError|NameError|UnboundLocalError|IndexError|KeyError"
    r"|AssertionError|RecursionError|ZeroDivisionError|StopIteration|SyntaxError)\b"
)

#: (words, cause), in the order an engineer weighs them: the first family whose words a
#: message uses names it.
FAMILY_WORDS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(words, re.IGNORECASE), cause)
    for words, cause in (
        (
            r"\bout of (device |gpu |host |shared )?memory\b|\binsufficient (device |gpu )?memory"
            r"\b|\bmemory (is )?exhausted\b|\b(failed to|cannot|could not|unable to) allocate\b",
            "out of memory",
        ),
        # a value over a maximum the config sets (a check ``x <= num_max_tokens`` that failed, a
        # count that ``exceeds the maximum``): the config's limit, whichever library checks it
        (
            r"<=? ?(self\.)?(num_)?max_\w+|\b(exceeds?|exceeding|exceeded|greater than|larger than"
            r"|more than) (the )?(max(imum)?|limit|allowed)\b",
            "invalid config",
        ),
        (
            r"\b(ptxas|nvcc|nvrtc|hiprtc|hipcc|ninja|cmake|gcc|g\+\+|clang|compiler|linker)\b"
            r"|\b(build|compil\w*|linking) (has )?(failed|error)\b"
            r"|\b(failed to|cannot|could not|unable to) (build|compile|jit)\b",
            "JIT compile failed",
        ),
        (
            r"\bundefined (symbol|reference)\b|\bversions? (mismatch|conflict)\b"
            r"|\b(failed to|cannot|could not|unable to) import\b"
            r"|\b(incompatible|mismatched|wrong) (version|release|build|wheel)s?\b"
            r"|\b(is|are) not installed\b|\bplease (re)?install\b|\bpip install\b"
            r"|\b(compiled|built) (with|against|for) (a |an )?(different|another|older|newer)\b"
            r"|\bABI\b|\.so(\.\d+)*\b",
            "broken install",
        ),
        (
            r"\b([nrh]ccl|ucx|ucc|nixl|rdma|ibverbs|ibv_\w+|infiniband|nvshmem|gloo|c10d"
            r"|tcpstore|rendezvous|mooncake|deepep|collectives?"
            r"|all[-_ ]?(reduce|gather|to[-_ ]?all)|reduce[-_ ]?scatter|process[-_ ]?group"
            r"|peer[-_ ]to[-_ ]peer)\b",
            "NCCL",
        ),
        (
            r"\b(cuda(?!:\d)|cudart|hip|rocm|cublas\w*|cudnn|cutlass|npu|ascend|aclnn\w*|xpu|musa"
            r"|kernel launch|(device|gpu) (error|fault|assert\w*))\b",
            "CUDA error",
        ),
        (
            # a setting named as one (``--flag``, a ``snake_case`` name) that ``must be`` something,
            # or a choice refused; ``The bias should be 1D`` is an operator's check of its tensor
            r"(^|[\s'\"`(])--[a-z][\w-]+|\b[a-z][a-z0-9]*_[a-z0-9_]+`?'? (must|should) be\b"
            r"|\b(not supported|unsupported|only supports?|cannot be (used|combined|enabled|set)"
            r"|not compatible with|incompatible with|invalid (value|argument|option|setting|choice"
            r"|combination)|is required|not allowed|not available)\b"
            # an error type of a setting's own config (``WatermarkConfigError``), or pydantic
            # refusing one (``1 validation error for KVEventsConfig``)
            r"|\b\w*Config(uration)?(Error|Exception)\b"
            r"|\bvalidation errors? for \w*(Config|Args|Arguments|Params|Settings)\b",
            "invalid config",
        ),
        (
            r"\b(load(ing)?|read(ing)?|open(ing)?) (the |model |of )?(weights?|checkpoints?"
            r"|shards?|safetensors|state[_ ]?dict)\b|\bsafetensors\b",
            "model loading",
        ),
        (r"\btokeni[sz]er\b", "tokenizer"),
        (
            r"\b(model|checkpoint|repo(sitory)?|config\.json)\b.{0,60}\b(not found|does not exist"
            r"|no such file)\b",
            "model not found",
        ),
    )
)


def family_named_by_words(message: str) -> str | None:
    """The family the words of ``message`` (an exception line, or a native runtime's last
    words) name, or None for a fault of the code's own (:data:`_CODE_MISTAKE`) or for words that
    name no family."""
    text = message.strip()
    if _CODE_MISTAKE.match(text) or _CODE_FAULT.search(text):
        return None
    for words, cause in FAMILY_WORDS:
        if words.search(text):
            return cause
    return None
