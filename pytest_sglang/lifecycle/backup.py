"""The intent record and the copies of the originals, kept on the host itself.

Why on the host: a session can die at any instant (SIGKILL, a lost machine, a cut connection),
and whoever runs next - any machine, any user - must be able to put the host back. So before a
deployer changes anything it writes ``manifest.json`` into its backup directory: who changes the
host (``owner``), what will change (``changes``), whatever the deployer needs to undo its own
state (``service``: a unit's prior state, a process's group), and one entry per file *before*
that file is copied or touched. ``restore_files`` then puts every file back byte-identical
(``cp -a`` keeps mode and owner), removes files that did not exist and the directories made for
them, and moves set-aside directories back. A backup left by a session that died is reused,
never overwritten: its copies are the real originals.

Every deployer that changes files uses this one class (systemd and process alike), so every
deployment is recovered after a SIGKILL the same way.
"""

from __future__ import annotations

import json
import posixpath
from typing import TYPE_CHECKING, Any

from ..errors import DeployError, RestoreError

if TYPE_CHECKING:
    from ..transport.base import CommandResult, Transport

__all__ = ["HostBackup"]

# For each path ($@): NUL-separated "E" (it exists) or "M" and its missing ancestors, then "/".
_SURVEY = r"""for p in "$@"; do
  if [ -e "$p" ] || [ -L "$p" ]; then printf 'E\0'; else
    printf 'M\0'; d=$(dirname -- "$p")
    while [ "$d" != / ] && [ "$d" != . ] && [ ! -d "$d" ]; do
      printf '%s\0' "$d"; d=$(dirname -- "$d")
    done
  fi
  printf '/\0'
done
"""
# Pairs ($1 original, $2 copy): each copied beside its copy's name, then renamed over it; the
# path being copied is printed first, so a failure names it.
_COPY = r"""while [ "$#" -ge 2 ]; do
  echo "$1"
  mkdir -p -- "$(dirname -- "$2")" && cp -a -- "$1" "$2.tmp" && mv -f -- "$2.tmp" "$2" || exit
  shift 2
done
"""


class HostBackup:
    """The backup directory ``directory`` on a host reached by ``transport``."""

    def __init__(self, transport: Transport, directory: str, *, host: str) -> None:
        self.transport = transport
        self.directory = directory
        self.host = host
        #: The record this session wrote (or adopted from a dead one); None before the first
        #: change and after a restore.
        self.manifest: dict[str, Any] | None = None
        #: Directories this session made (or found) for the files it writes: made once.
        self._made: set[str] = set()
        #: This session read no record and wrote none since: none is there (the host lock keeps
        #: every other session from writing one), so it is not read again.
        self._absent = False

    @property
    def manifest_path(self) -> str:
        return f"{self.directory}/manifest.json"

    # -- shell helpers ----------------------------------------------------------------------
    def _sh(self, command: str, *args: object, timeout: float = 60.0) -> CommandResult:
        return self.transport.run(command, *args, timeout=timeout)

    def check(self, what: str, command: str, *args: object, timeout: float = 60.0) -> str:
        """Run a command; a failure is one DeployError line naming ``what``."""
        result = self._sh(command, *args, timeout=timeout)
        if not result.ok:
            detail = (result.stderr or result.stdout).strip().splitlines()
            raise DeployError(
                f"host {self.host!r}: {what} failed (rc={result.rc}): "
                f"{detail[-1] if detail else 'no output'}"
            )
        return result.stdout

    def exists(self, path: str) -> bool:
        return self._sh("test -e %s || test -L %s", path, path).ok

    def write(self, path: str, data: bytes, mode: int) -> None:
        """Write ``path`` (its directory made first); the transport refuses a short write."""
        directory = posixpath.dirname(path)
        if directory not in self._made:
            self.check(f"creating {directory}", "mkdir -p -- %s", directory)
            self._made.add(directory)
        self.transport.put(data, path, mode=mode)

    # -- the record -------------------------------------------------------------------------
    def read(self) -> dict[str, Any] | None:
        """The intent record on the host, or None when there is none."""
        if self._absent:
            return None
        existing = self._sh("cat -- %s", self.manifest_path)
        if not existing.ok or not existing.stdout.strip():
            self._absent = True
            return None
        try:
            data = json.loads(existing.stdout)
        except ValueError:
            raise RestoreError(
                f"host {self.host!r}: the intent record {self.manifest_path} is not valid JSON; "
                "inspect it and the copies next to it, then remove it"
            ) from None
        return data if isinstance(data, dict) else None

    def pending(self) -> dict[str, Any] | None:
        """The record an earlier session left (it died before restoring); None when ours."""
        if self.manifest is not None:
            return None
        return self.read()

    def begin(
        self, owner: dict[str, Any], changes: dict[str, Any], service: dict[str, Any]
    ) -> dict[str, Any]:
        """The record, adopted from a dead session or started now (saved by ``back_up``)."""
        if self.manifest is not None:
            return self.manifest
        existing = self.read()
        if existing is not None:
            # A previous session died before restoring: its backup holds the originals.
            self.manifest = existing
            return existing
        self.manifest = {
            "version": 1,
            "owner": dict(owner),
            "changes": changes,
            "service": service,
            "files": {},
            "moved": {},
        }
        # Twice: another session's ``finish`` may remove the shared parent (when it looks empty)
        # between ``mkdir -p`` making it and making this directory in it.
        self.check(
            "creating the backup dir",
            "mkdir -p -m 700 -- %s || mkdir -p -m 700 -- %s",
            self.directory,
            self.directory,
        )
        return self.manifest

    def save(self) -> None:
        """Write the record (its directory exists since ``begin``)."""
        assert self.manifest is not None
        data = json.dumps(self.manifest, indent=1, sort_keys=True).encode()
        self._absent = False
        self.transport.put(data, self.manifest_path, mode=0o600)

    def back_up(self, paths: list[str], *, move_aside: tuple[str, ...] = ()) -> None:
        """Record, then copy, every path not yet backed up, and move ``move_aside`` directories
        out of the way, before any of them is changed.

        Order matters for a kill at any instant: the record names each copy before the copy is
        made (restore skips a copy that was never made: its original was not touched yet), and
        names each move before the move.
        """
        manifest = self.manifest
        assert manifest is not None, "begin() first"
        files: dict[str, Any] = manifest["files"]
        moved: dict[str, Any] = manifest.setdefault("moved", {})
        changed = False
        new: list[str] = []
        survey = self._survey([path for path in paths if path not in files])
        for path in paths:
            if path in files:
                continue
            changed = True
            copy = f"{self.directory}/files/{len(files)}"
            existed, missing = survey[path]
            if not missing:  # its directory is there: writing it needs no mkdir
                self._made.add(posixpath.dirname(path))
            files[path] = {"existed": existed, "copy": copy if existed else None}
            if existed:
                new.append(path)
            else:
                manifest.setdefault("created_dirs", []).extend(missing)
        to_move: list[str] = []
        for i, directory in enumerate(move_aside):
            if directory in moved:
                continue
            changed = True
            present = self._sh("test -d %s", directory).ok
            moved[directory] = f"{self.directory}/moved/{i}" if present else None
            if present:
                to_move.append(directory)
        if changed:  # every redeploy of the same paths would rewrite an identical record
            self.save()
        if new:  # one command for all the copies; a failure names its file
            pairs = [word for path in new for word in (path, files[path]["copy"])]
            result = self._sh("sh -c %s sh" + " %s" * len(pairs), _COPY, *pairs)
            if not result.ok:
                failed = (result.stdout.strip().splitlines() or [new[0]])[-1]
                detail = result.stderr.strip().splitlines()
                raise DeployError(
                    f"host {self.host!r}: backing up {failed} failed (rc={result.rc}): "
                    f"{detail[-1] if detail else 'no output'}"
                )
        for directory in to_move:
            target = moved[directory]
            self.check(
                f"moving {directory} aside",
                "mkdir -p -- %s && mv -- %s %s",
                posixpath.dirname(target),
                directory,
                target,
            )

    def _survey(self, paths: list[str]) -> dict[str, tuple[bool, list[str]]]:
        """For each path, in one command: whether it exists, and else its ancestors that do
        not exist yet (deepest first), to remove on restore."""
        if not paths:
            return {}
        out = self.check(
            "looking at the files to change", "sh -c %s sh" + " %s" * len(paths), _SURVEY, *paths
        )
        words = out.split("\0")
        found: dict[str, tuple[bool, list[str]]] = {}
        for path in paths:
            existed = words.pop(0) == "E"
            missing: list[str] = []
            while words and words[0] != "/":
                missing.append(words.pop(0))
            if words:
                words.pop(0)
            found[path] = (existed, missing)
        return found

    # -- restore ----------------------------------------------------------------------------
    def restore_files(self, manifest: dict[str, Any]) -> None:
        """Every file back as it was, set-aside directories back, our directories gone."""
        for path, info in manifest["files"].items():
            if not info["existed"]:
                self.check(f"removing {path}", "rm -f -- %s", path)
            elif self.exists(info["copy"]):
                self.check(
                    f"restoring {path}",
                    "cp -a -- %s %s.sglang-restore && mv -f -- %s.sglang-restore %s",
                    info["copy"],
                    path,
                    path,
                    path,
                )
            # else: killed before the copy was made, so the original was never touched.
        for directory, copy in _moved(manifest).items():
            if copy and self._sh("test -d %s", copy).ok:
                self.check(
                    f"restoring {directory}",
                    "rm -rf -- %s && cp -a -- %s %s",
                    directory,
                    copy,
                    directory,
                )
        created = set(manifest.get("created_dirs", []))
        for directory in sorted(created, key=lambda d: d.count("/"), reverse=True):
            self._sh("rmdir -- %s", directory)  # only if empty; ours are

    def finish(self) -> None:
        """Remove the backup (the host is restored) and its parent if no other backup is left."""
        self.check("removing the backup", "rm -rf -- %s", self.directory)
        self._sh("rmdir -- %s", posixpath.dirname(self.directory))
        self.manifest = None
        self._made.clear()  # a restore removed the directories it made


def _moved(manifest: dict[str, Any]) -> dict[str, str | None]:
    """Set-aside directories and their copies; a record written by an earlier release names its
    one moved drop-in directory as ``dropin`` (restored the same way)."""
    moved: dict[str, str | None] = dict(manifest.get("moved") or {})
    legacy = manifest.get("dropin") or {}
    directory = (manifest.get("changes") or {}).get("dropin_dir")
    if legacy.get("existed") and legacy.get("copy") and directory:
        moved.setdefault(directory, legacy["copy"])
    return moved
