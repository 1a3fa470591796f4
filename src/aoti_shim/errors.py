"""The one exception root. Only the CLI and the PEP 517 backend turn it into an exit."""

from __future__ import annotations

# Exit status is a bitmask, as abidiff's: a CI gate can test bits.
EXIT_OK = 0
EXIT_TOOL_ERROR = 1
EXIT_USAGE = 2
EXIT_WARNINGS = 4
EXIT_BLOCKING = 8


class AotiShimError(Exception):
    """An expected failure with a one-line message and an exit status."""

    exit_code = EXIT_TOOL_ERROR

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(AotiShimError):
    """The command line or configuration is wrong."""

    exit_code = EXIT_USAGE


class InputError(AotiShimError):
    """An input could not be read or is not what it claims (bad ELF, bad wheel)."""

    exit_code = EXIT_TOOL_ERROR
