"""The repository's own pytest setup, shared by tests/, scenarios/ and the docs check.

pytest-sglang itself needs nothing here (pytest loads it through its entry point). What this
repository adds is ``pytester``: the plugin's own tests run child pytest sessions with it. It is
registered here, at the rootdir, rather than in every test directory's conftest (pytest only
accepts ``pytest_plugins`` in the rootdir's conftest) or as ``-p pytester`` in the ini file's
``addopts`` (which a ``-o addopts=`` or another ini file would silently drop).
"""

pytest_plugins = ["pytester"]
