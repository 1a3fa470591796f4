"""A hostile-input pass: a hypothesis strategy per input kind the checker takes (prefix
strings, ELF bytes, wheels, snapshots, suppressions files). Whatever comes in, the command
ends with one of its exit codes, at most one line on standard error, and no traceback
(``aoti_shim.cli.main`` lets any exception but AotiShimError through, so one fails the test).
Few examples each, to stay fast; AOTI_SHIM_HYPOTHESIS_EXAMPLES raises the count."""

from __future__ import annotations

import os
import re
import tempfile
import warnings
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aoti_shim.checks.abi.prefix import SHIM_MARK, validate
from aoti_shim.checks.snapshot import record as snapshot_mod
from aoti_shim.cli import main
from aoti_shim.errors import UsageError

EXAMPLES = int(os.environ.get("AOTI_SHIM_HYPOTHESIS_EXAMPLES", "25"))
CODES = {0, 1, 2, 4, 8}
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,  # the same examples every run: a failure reproduces
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> int:
    capsys.readouterr()
    code = main(list(argv))
    err = capsys.readouterr().err
    assert code in CODES, (code, err)
    if code in (1, 2):
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("aoti-shim: error: "), err
    assert "Traceback" not in err
    return code


@pytest.fixture(scope="module")
def shim_bytes(checker_libs) -> bytes:
    return checker_libs["clean_shim"].read_bytes()


# -- prefix strings ------------------------------------------------------------------------

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@SETTINGS
@given(st.one_of(st.text(max_size=12), st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}\n?", fullmatch=True)))
def test_prefix_rule_is_a_full_identifier_match(prefix):
    ok = bool(_IDENT.fullmatch(prefix)) and not prefix.startswith(SHIM_MARK)
    if ok:
        assert validate(prefix) == prefix
    else:
        with pytest.raises(UsageError):
            validate(prefix)


@SETTINGS
@given(prefix=st.text(min_size=1, max_size=12).filter(lambda p: not p.startswith("-")))
def test_check_with_any_prefix(capsys, checker_libs, prefix):
    run(
        capsys,
        "check",
        "--shim",
        str(checker_libs["clean_shim"]),
        "--model",
        str(checker_libs["good_model"]),
        "--prefix",
        prefix,
    )


# -- ELF bytes -------------------------------------------------------------------------------


@SETTINGS
@given(
    edits=st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), min_size=1, max_size=24),
    cut=st.integers(0, 1 << 16),
)
def test_check_with_any_elf_bytes(capsys, shim_bytes, edits, cut):
    data = bytearray(shim_bytes)
    for at, value in edits:
        data[at % len(data)] = value
    data = data[: max(4, cut)] if cut < len(data) else data
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "libfuzz.so"
        path.write_bytes(bytes(data))
        run(capsys, "check", "--shim", str(path), "--model", str(path), "--format", "json")


# -- wheels ------------------------------------------------------------------------------------

_NAMES = st.sampled_from(
    ["pkg/lib.so", "pkg/lib.so", "torch/lib/libc10.so", "torch/version.py", "../x.so", "/abs.so", "a\\..\\..\\b.so",
     "C:/x.so", "pkg/", "pkg/\x1b[2K.so", "torch/lib/libtorch_cpu.so", ""]
)


@SETTINGS
@given(
    members=st.lists(
        st.tuples(_NAMES, st.one_of(st.just(b"SHIM"), st.binary(max_size=64), st.just(b"\x7fELF" + bytes(64)))),
        max_size=6,
    ),
    stored=st.booleans(),
)
def test_every_wheel_reader_with_any_wheel(capsys, shim_bytes, members, stored):
    with tempfile.TemporaryDirectory() as tmp:
        wheel = Path(tmp) / "torch-1.0-cp311-cp311-linux_x86_64.whl"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with zipfile.ZipFile(wheel, "w", zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED) as zf:
                for name, content in members:
                    if not name:
                        continue
                    zf.writestr(name, shim_bytes if content == b"SHIM" else content)
        run(capsys, "check", "--shim", str(wheel))
        run(capsys, "check", "--shim", str(wheel), "--against", str(wheel))
        run(capsys, "snapshot", str(wheel), "-o", str(Path(tmp) / "s.json.gz"), "--torch-version", "1")


@SETTINGS
@given(data=st.binary(min_size=0, max_size=300))
def test_check_with_any_zip_bytes(capsys, data):
    with tempfile.TemporaryDirectory() as tmp:
        wheel = Path(tmp) / "x-1.0-py3-none-any.whl"
        wheel.write_bytes(b"PK\x03\x04" + data)
        run(capsys, "check", "--shim", str(wheel))


# -- snapshots -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def snapshot_bytes(checker_libs, tmp_path_factory) -> bytes:
    lib_dir = tmp_path_factory.mktemp("snap") / "torch" / "lib"
    lib_dir.mkdir(parents=True)
    (lib_dir / "libtorch_cpu.so").write_bytes(checker_libs["unprefixed_shim"].read_bytes())
    out = lib_dir.parent / "s.json.gz"
    snapshot_mod.write(snapshot_mod.capture(lib_dir, torch_version="1"), out)
    return out.read_bytes()


_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-5, 1 << 40), st.text(max_size=8)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12,
)


@SETTINGS
@given(
    edits=st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), max_size=8),
    header=st.one_of(
        st.none(),
        st.dictionaries(
            st.sampled_from(["format", "format_version", "torch_version", "libraries", "members", "x"]),
            _JSON,
            max_size=6,
        ),
    ),
)
def test_check_against_any_snapshot(capsys, checker_libs, snapshot_bytes, edits, header):
    import gzip
    import json

    if header is not None:
        header = {"format": "aoti-shim-snapshot", **header}
        data = bytearray(gzip.compress(json.dumps(header).encode(), mtime=0) + snapshot_bytes[40:])
    else:
        data = bytearray(snapshot_bytes)
    for at, value in edits:
        data[at % len(data)] = value
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.json.gz"
        path.write_bytes(bytes(data))
        run(capsys, "check", "--shim", str(checker_libs["unprefixed_shim"]), "--against", str(path))


# -- suppressions files -------------------------------------------------------------------------

_VALUE = st.one_of(st.text(max_size=10), st.integers(), st.booleans(), st.lists(st.integers(), max_size=2))
_KEY = st.sampled_from(["rule", "symbol", "artifact", "reason", "rul", "x"])


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + "".join(c if c.isalnum() or c in " *_-." else f"\\u{ord(c):04x}" for c in value) + '"'
    return repr(value)


@SETTINGS
@given(
    tables=st.lists(
        st.tuples(st.sampled_from(["suppress", "supress", "other"]), st.dictionaries(_KEY, _VALUE, max_size=4)),
        max_size=3,
    ),
    text=st.one_of(st.none(), st.text(max_size=80), st.binary(max_size=40).map(lambda b: b.decode("latin-1"))),
)
def test_check_with_any_suppressions_file(capsys, checker_libs, tables, text):
    if text is None:
        text = "".join(
            f"[[{name}]]\n" + "".join(f"{k} = {_toml_value(v)}\n" for k, v in table.items()) for name, table in tables
        )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.toml"
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
        run(capsys, "check", "--shim", str(checker_libs["unprefixed_shim"]), "--suppressions", str(path))


def test_the_pass_covers_every_input_kind():
    """A new input kind needs a strategy here: the list of the checker's inputs is short."""
    kinds = {"prefix", "elf", "wheel", "zip", "snapshot", "suppressions"}
    names = {n for n in globals() if n.startswith("test_")}
    covered = {k for k in kinds if any(k in n for n in names if n != "test_the_pass_covers_every_input_kind")}
    assert covered == kinds
