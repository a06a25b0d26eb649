"""Other libraries' internals the course relies on, each pinned to the versions it was checked
with: a new version fails here, naming what to re-check, instead of failing somewhere quiet.

- conftest.py reads a notebook kernel's pid at ``kernel.km.provisioner.pid`` (nbval's
  RunningKernel keeps jupyter_client's KernelManager as ``km``; nbval does not document it) to
  watch the notebook's time, memory and leftover processes.
- (Replaced, no longer pinned: nbval's cells are found with ``isinstance(item, IPyNbCell)``
  instead of by class name; the site's table of contents no longer patches mkdocs-jupyter's
  private ``_get_nb_toc_tokens`` but rebuilds it in a public mkdocs hook, tools/site_hooks.py.)
"""

from __future__ import annotations

import importlib.metadata
import inspect

import nbval.kernel
from course_code import ROOT
from jupyter_client import KernelManager
from jupyter_client.provisioning import LocalProvisioner

CHECKED = {"nbval": {"0.11.0"}, "jupyter_client": {"8.10.0"}}


def test_the_kernel_pid_is_where_the_checked_versions_keep_it():
    versions = {name: importlib.metadata.version(name) for name in CHECKED}
    assert all(versions[name] in CHECKED[name] for name in CHECKED), (
        f"{versions}: check that conftest.py's kernel_pid still finds the kernel's pid "
        f"(nbval's RunningKernel.km, KernelManager.provisioner, LocalProvisioner.pid), then add "
        f"the versions to CHECKED"
    )
    assert "self.km" in inspect.getsource(nbval.kernel.RunningKernel.__init__)
    assert "provisioner" in KernelManager.__annotations__ and hasattr(LocalProvisioner, "pid")


def test_the_kernel_pid_reader_follows_that_path(pytestconfig):
    from types import SimpleNamespace

    conftest = pytestconfig.pluginmanager.get_plugin(str(ROOT / "conftest.py"))  # the root one
    kernel = SimpleNamespace(km=SimpleNamespace(provisioner=SimpleNamespace(pid=1234)))
    assert conftest.kernel_pid(kernel) == 1234 and conftest.kernel_pid(SimpleNamespace()) is None
