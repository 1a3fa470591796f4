"""Where an AotiShimError (or a SIGTERM) becomes the backend's exit status."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from aoti_shim.errors import AotiShimError
from aoti_shim.plugin import console
from aoti_shim.signals import EXIT_TERMINATED, Terminated, sigterm_as_interrupt


@contextlib.contextmanager
def pep517_boundary() -> Iterator[None]:
    """The one place besides the CLI where an AotiShimError becomes an exit status.

    SIGTERM raises inside the block, so temp folders, private wheels and children are
    cleaned up on the way out, as for Ctrl-C.
    """
    try:
        with sigterm_as_interrupt():
            yield
    except AotiShimError as e:
        console.error(str(e))
        raise SystemExit(e.exit_code) from None
    except Terminated:
        console.error("terminated (SIGTERM); nothing was published")
        raise SystemExit(EXIT_TERMINATED) from None
