"""The shape of a Python traceback in a record: frames, source lines, the exception, chains.

A record is read line by line, but a traceback is not a set of lines: its frames are never a
cause, its exception line is, a message may go on over the lines after it, and a chain (``The
above exception was the direct cause ...``) ties several together. This module answers those
structural questions (is this a frame, where does this traceback end, which frames are above
this exception, has every traceback ended) and knows no causes: the rules and the placement
build on it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .lines import _strip_prefix, _unwrap

#: The header Python's faulthandler prints when a signal (SIGSEGV, SIGBUS, SIGABRT, SIGFPE) kills
#: the process: the crash's own report, printed before anything the parent says about it. Its
#: frames follow it (innermost first), under ``Current thread ...`` or ``Stack``.
_FAULTHANDLER = re.compile(r"^Fatal Python error: \w")
_FAULT_STACK = re.compile(r"^(Current thread \w+|Stack) \(most recent call first\):")

_TRACEBACK = re.compile(r"Traceback \(most recent call last\):")
_CHAIN = re.compile(
    r"^(The above exception was the direct cause of the following exception:"
    r"|During handling of the above exception, another exception occurred:)"
)
_EXCEPTION = re.compile(
    r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Fault)(\([\w.]+\))?(: |:$|$)"
)


def _is_frame(text: str) -> bool:
    """A traceback frame, its source line or caret marks, or a C++ stack frame: never a cause."""
    return (
        text.startswith("    ")
        or text.lstrip().startswith('File "')
        or text.startswith("frame #")
        or not text.strip(" ^~")
        or text.lstrip().startswith("[Previous line repeated")
    )


#: A traceback frame's call line (``File "x.py", line 9, in f``), however it is indented.
_FRAME_CALL = re.compile(r'^\s*File "[^"]*", line \d+')
#: A frame's call line with its file and function (``<module>`` and ``<lambda>`` included).
FRAME_FUNCTION = re.compile(r'^\s*File "(?P<path>[^"]*)", line \d+, in (?P<func>[\w<>.]+)')
#: Lines that, right after a frame's call line, are not its source line: an exception (any
#: ``dotted.Name: message``, or a bare one :data:`_EXCEPTION` knows), faulthandler's header, a
#: traceback's opening or chain marker, or a process's last words.
_NOT_SOURCE = re.compile(
    r"^([A-Za-z_][\w.]*(\([\w.]+\))?: |Fatal Python error|Traceback \(most recent"
    r"|The above exception|During handling of|Killed$|Segmentation fault|Aborted)"
)


def _texts(lines: Sequence[str], start: int) -> list[str]:
    """The lines as SGLang (or Python) wrote them, from ``start`` on (earlier ones blank), with
    each traceback frame's source line indented as Python prints it.

    Python prints one source line under a frame's ``File "...", line N, in f``; a report that
    quotes a traceback often loses the indentation (``self._init(args)`` at the margin, or with
    one space), which would make the source line read as the traceback's exception. The line
    right after a frame's call line is its source line unless it is an exception or a marker
    (:data:`_NOT_SOURCE`; a frame whose source is not available is followed by the next frame
    or by the exception itself), so it is given the indentation it lost.
    """
    texts = [""] * start + [_strip_prefix(line) for line in lines[start:]]
    for index in range(start + 1, len(texts)):
        text, above = texts[index], texts[index - 1]
        if (
            _FRAME_CALL.match(above)
            and _unwrap(lines[index]) == text  # a timestamped line is a new record
            and text.strip()
            and not text.startswith("    ")
            and not _FRAME_CALL.match(text)
            and not _NOT_SOURCE.match(text.strip())
            and not _EXCEPTION.match(text.strip())
        ):
            texts[index] = "    " + text.strip()
    return texts


def _stray_indented(texts: Sequence[str], index: int) -> bool:
    """Whether the indented line ``index`` is outside any traceback: no frame's call line is
    above it in its run of frame-like lines. A native runtime indents its own error lines (Ascend
    CANN's ``        [Init][Compiler]Init compiler failed...``, a C++ library's report under
    its headline); those are the record's words, read like any other line, not a frame's
    source."""
    text = texts[index]
    if not text[:1].isspace() or not text.strip(" ^~") or _FRAME_CALL.match(text):
        return False
    for back in range(index - 1, -1, -1):
        above = texts[back]
        if _FRAME_CALL.match(above) or _TRACEBACK.search(above):
            return False
        if not above.strip() or not _is_frame(above):
            return True
    return True


def _exception_line(texts: Sequence[str], start: int) -> int | None:
    """The index of the exception line of the traceback that begins at ``start``, or None while
    its frames are still coming."""
    for index in range(start + 1, len(texts)):
        text = texts[index]
        if _is_frame(text):
            continue
        return index
    return None


#: The C++ runtime's last words for an uncaught exception; the line after it, when it prints
#: one, says what it was (``terminate called after throwing an instance of
#: 'c10::DistBackendError'``, then ``  what():  [PG ID 2 ...] ... CUDA error: an illegal memory
#: access was encountered``).
_TERMINATE = re.compile(r"terminate called after throwing an instance of ")


def traceback_complete(lines: Sequence[str], start: int = 0) -> bool:
    """Whether every traceback begun at or after ``start`` has printed its exception line.

    A traceback is written frame by frame and ends with the exception (``RuntimeError: ...``);
    a chained one (``The above exception was the direct cause...``) continues after it, and the
    C++ runtime's ``terminate called after throwing ...`` with the line after it. Until
    this is True the line that names the cause may still be on its way, so a reader waiting for
    the cause can stop waiting exactly when it is True instead of after a fixed settle time.
    """
    texts = _texts(lines, start)
    index = start
    pending = False
    while index < len(texts):
        if _TRACEBACK.search(texts[index]):
            end = _exception_line(texts, index)
            if end is None:
                return False
            pending = False
            if end != index and _TRACEBACK.search(texts[end]):
                # an exception quoting a traceback of its own, printed after it (SGLang 0.2's
                # ``Initialization failed. controller_init_state: Traceback ...``)
                index = end
                continue
            index = end
        elif _CHAIN.match(texts[index]):
            pending = True
        elif _TERMINATE.search(texts[index]) and not any(t.strip() for t in texts[index + 1 :]):
            return False  # the last line yet: C++'s ``what():`` line, which says why, may follow
        index += 1
    return not pending


def _continuation(lines: Sequence[str], texts: Sequence[str], head: int) -> list[int]:
    """The lines that continue the exception message on line ``head``: SGLang and torch print
    multi-line messages (a reason, a hint, the real cause) as untimestamped lines right after it.

    They end at a timestamped line, a blank line, a new traceback or chain marker, a frame, or an
    exception line of their own; at most eight are read, or 24 for an exception with no message
    on its own line (:data:`_EMPTY_MESSAGE`), whose whole message is on them.
    """
    more: list[int] = []
    limit = 24 if _EMPTY_MESSAGE.match(texts[head].strip()) else 8
    for index in range(head + 1, min(len(texts), head + 1 + limit)):
        text = texts[index]
        if (
            lines[index] != text
            or not text.strip()
            or _TRACEBACK.search(text)
            or _CHAIN.match(text)
            or text.lstrip().startswith('File "')
            or _EXCEPTION.match(text)
        ):
            break
        more.append(index)
    return more


def _raised_where(texts: Sequence[str], index: int) -> str:
    """``(raised in <function>, <module>)`` for the innermost frame above the exception on
    ``index``, or nothing when no frame is shown."""
    for back in range(index - 1, -1, -1):
        if not _is_frame(texts[back]):
            return ""
        found = FRAME_FUNCTION.match(texts[back])
        if found is not None:
            module = "/".join(found.group("path").split("/")[-2:])
            return f"(raised in {found.group('func')}, {module})"
    return ""


def innermost_calls(frames: Sequence[str], count: int) -> list[tuple[str, str]]:
    """The ``count`` innermost calls of a traceback's ``frames`` (innermost first, as
    :func:`_frames_above` gives them) as (function, statement), the statement '' where the record
    does not show it."""
    found: list[tuple[str, str]] = []
    code = ""
    for text in frames:
        call = FRAME_FUNCTION.match(text)
        if call is None:
            if text.strip(" ^~"):
                code = text.strip()
            continue
        found.append((call["func"], code))
        code = ""
        if len(found) == count:
            break
    return found


#: An exception line with no message on it (``ImportError: ``): what it says is on the lines
#: that continue it.
_EMPTY_MESSAGE = re.compile(r"^[A-Za-z_][\w.]*(\([\w.]+\))?:\s*$")


def _chain_of(texts: Sequence[str], index: int) -> list[int]:
    """The exception lines of the chain (``The above exception was the direct cause ...``,
    ``During handling of the above exception ...``) that the exception on ``index`` belongs to,
    in the order printed; just ``[index]`` when it is not chained."""
    chains: list[list[int]] = []
    chained = False
    at = 0
    while at < len(texts):
        if _TRACEBACK.search(texts[at]):
            end = _exception_line(texts, at)
            if end is None:
                break
            if chained and chains:
                chains[-1].append(end)
            else:
                chains.append([end])
            chained, at = False, end
        elif _CHAIN.match(texts[at]):
            chained = True
        at += 1
    return next((chain for chain in chains if index in chain), [index])


def _frames_above(texts: Sequence[str], index: int) -> list[str]:
    """The traceback frames just above the exception line ``index``, innermost first."""
    frames = []
    for back in range(index - 1, -1, -1):
        if not _is_frame(texts[back]):
            break
        frames.append(texts[back])
    return frames


def _raising_statement_at(texts: Sequence[str], index: int) -> int | None:
    """The index of the source line of the frame that raised the exception on ``index`` (the
    statement Python shows under the innermost frame), or None when the traceback does not
    show it. Python 3.11's caret marks under it, and the further lines of a statement that
    Python 3.13 prints whole, lie between it and the exception; a report's own indentation of
    it (none, one space, eight) was already made a frame's by :func:`_texts`."""
    for back in range(index - 1, max(-1, index - 10), -1):
        text = texts[back]
        if _FRAME_CALL.match(text):
            if back == index - 1:
                return None  # the frame's source is not shown
            first = texts[back + 1]
            return back + 1 if first.startswith("    ") and first.strip(" ^~") else None
        if not _is_frame(text) or not text.strip():
            return None
    return None


def _raising_statement(texts: Sequence[str], index: int) -> str | None:
    """The statement that raised the exception on ``index`` (:func:`_raising_statement_at`),
    stripped, or None."""
    at = _raising_statement_at(texts, index)
    return None if at is None else texts[at].strip()


def _fault_frames(texts: Sequence[str], index: int) -> list[str]:
    """The frames faulthandler printed after its header at ``index`` for the thread the signal
    hit (``Current thread ...`` or ``Stack``), innermost first; the other threads' frames (a
    progress bar's monitor thread, say) say nothing about the crash."""
    frames: list[str] = []
    inside = False
    for text in texts[index + 1 : index + 400]:
        if _FAULT_STACK.match(text):
            inside = True
        elif inside and text.lstrip().startswith('File "'):
            frames.append(text)
        elif inside and text.strip():
            break
    return frames
