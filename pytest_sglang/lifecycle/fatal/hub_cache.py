"""A model path that names a folder of the Hugging Face hub's cache rather than a model.

The hub's cache holds a model as ``HF_HOME/hub/models--<owner>--<name>/``: ``blobs/`` named by
content, ``snapshots/<revision>/`` (the model's folder, links into the blobs) and ``refs/``. A
path given as the model's that stops at the model's cache folder, or at its ``snapshots``,
``blobs`` or ``refs`` folder, holds no ``config.json``, and what reads it first says so in its
own words: transformers' ``Unrecognized model in <path>. Should have a `model_type` key in its
config.json`` reads the same for a folder with no config and for a config without a model type,
so the path is the only word on which it is. An engineer who sees ``models--tiny--llama`` there
knows the server was pointed one folder short: the fix is the model's id (with ``HF_HOME``
set to the cache's home) or one of its snapshots.
"""

from __future__ import annotations

import re

#: A path ending at a model's cache folder or one of its own folders (not a snapshot's).
_CACHE_FOLDER = re.compile(
    r"(?P<path>(?:/[^/\s'\"`]+)*/models--(?P<owner>[^/\s'\"`]+?)--(?P<name>[^/\s'\"`]+?)"
    r"(?:/(?:snapshots|blobs|refs))?)/?(?=[\s'\"`,:;)]|\.(?:\s|$)|$)"
)


def hub_cache_folder(line: str) -> str | None:
    """A phrase naming the hub cache's folder that ``line`` (an exception reading the model)
    gives as the model's path, and what to give instead; None when it names none."""
    found = _CACHE_FOLDER.search(line)
    if found is None:
        return None
    model = f"{found['owner']}/{found['name']}"
    return (
        f"{found['path']} is a folder of the Hugging Face cache's copy of {model}, not a model:"
        f" give --model-path {model} with HF_HOME set to the cache's home, or a folder under"
        " its snapshots/"
    )
