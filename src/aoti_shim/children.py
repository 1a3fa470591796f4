"""How aoti-shim starts its Python children, and how a child starts.

``python -m pkg.worker`` puts the current folder first on ``sys.path``, so a ``json.py``
or ``lief.py`` lying there would run inside the child. Every child therefore starts in
isolated mode (``-I``: no current folder, no ``PYTHON*`` variables, no user site) with
the parent's own ``sys.path`` handed over explicitly, minus the current folder.

A child also dies with its parent: it asks the kernel for SIGKILL when the parent
goes (``PR_SET_PDEATHSIG``), so a killed ``aoti-shim`` leaves no LIEF child writing
into a temp file. The parent, for its part, kills the child on SIGTERM or Ctrl-C
(``subprocess.run`` does on any exception; :mod:`aoti_shim.signals` makes SIGTERM one).

The one thing that may come from the current folder on purpose is the user's own model
module (``smoke --model mymod:fn``): :func:`aoti_shim.smoke.models.user_folder_first`
puts that folder on the path for that one import only.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import runpy
import signal
import sys

_PR_SET_PDEATHSIG = 1


def _inherited_path() -> list[str]:
    here = os.path.realpath(os.getcwd())
    kept = []
    for entry in sys.path:
        if not entry:
            continue
        with contextlib.suppress(OSError):
            if os.path.realpath(entry) == here:
                continue
        kept.append(os.path.abspath(entry))
    return list(dict.fromkeys(kept))


def python_argv(module: str, *args: str) -> list[str]:
    """The command line that runs ``python -m module args...`` safely (see the module docstring)."""
    boot = (
        f"import sys; sys.path[:] = {_inherited_path()!r}; "
        "from aoti_shim.children import child_main; child_main()"
    )
    return [sys.executable, "-I", "-c", boot, module, str(os.getpid()), *args]


def _die_with_parent(parent: int) -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the parent's own kill is all there is
        pass
    # The parent may have died before the request above took effect.
    if os.getppid() != parent:
        os._exit(128 + signal.SIGKILL)


def child_main() -> None:
    """Entry of a child started by :func:`python_argv`: ``-c BOOT module parent-pid args...``."""
    module, parent = sys.argv[1], int(sys.argv[2])
    _die_with_parent(parent)
    sys.argv = [module, *sys.argv[3:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)

