"""``aoti-shim wheelhouse DIR``: this installation of aoti-shim, written back as a wheel.

aoti-shim is on no package index yet, and a project that builds with ``aoti_shim.build``
lists ``aoti-shim`` in ``[build-system] requires``: pip's isolated build environment must
install it from somewhere. This command writes the installed distribution (the wheel
that ``pip install`` of the clone built: the compiled reference shims, the CMake
package, the Python) into a folder, for ``PIP_FIND_LINKS`` / ``--find-links``. It takes
a second; ``pip wheel --no-deps <clone> -w DIR`` makes the same wheel from the source
in minutes (the shims' CUDA kernels compile again).

Only the files the installation's ``RECORD`` lists and whose hash still matches go in:
an edited or missing file refuses the wheel, so what pip installs from it is what pip
installed here. Console scripts are left out (pip writes them again from the entry
points), as are the files that describe one installation (``RECORD``, ``INSTALLER``,
``direct_url.json``...).
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import importlib.metadata as metadata
import io
import json
import os
import re
import zipfile
from pathlib import Path

from aoti_shim.arguments import path
from aoti_shim.errors import AotiShimError, InputError
from aoti_shim.guard import output_folder
from aoti_shim.paths import REINSTALL

DIST = "aoti-shim"
_INSTALL_ONLY = frozenset({"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"})
# Fixed member times: the same installation gives the same bytes.
_EPOCH = (1980, 1, 1, 0, 0, 0)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "wheelhouse",
        help="write this installed aoti-shim as a wheel into a folder, for pip's --find-links",
        description=(
            "Write the installed aoti-shim, as the wheel pip installed, into DIR, so that pip's isolated "
            "builds of a project with requires = [\"aoti-shim\"] find it: PIP_FIND_LINKS=DIR pip wheel . "
            "Needed until aoti-shim is on a package index. Prints the wheel's path."
        ),
    )
    p.add_argument("folder", type=path, metavar="DIR", help="the folder to write the wheel into (created if missing)")
    p.set_defaults(run=run)


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _installed() -> metadata.Distribution:
    try:
        dist = metadata.distribution(DIST)
    except metadata.PackageNotFoundError:
        raise InputError(f"{DIST} is not installed as a distribution here: pip install <the aoti-shim clone>") from None
    try:
        direct = json.loads(dist.read_text("direct_url.json") or "{}")
    except ValueError:
        direct = {}
    if isinstance(direct, dict) and isinstance(direct.get("dir_info"), dict) and direct["dir_info"].get("editable"):
        raise InputError(
            f"{DIST} is installed editable, which holds no built shims: build its wheel from the clone instead "
            "(pip wheel --no-deps <the clone> -w DIR)"
        )
    return dist


def _tag(dist: metadata.Distribution) -> str:
    tags = [
        line.split(":", 1)[1].strip()
        for line in (dist.read_text("WHEEL") or "").splitlines()
        if line.startswith("Tag:")
    ]
    if not tags:
        raise InputError(f"{DIST}: its installation has no WHEEL file with a tag; reinstall it with pip")
    parts = [t.split("-") for t in tags]
    # Compressed tag sets, as wheel file names write them (py3-none-a.b).
    return "-".join(".".join(dict.fromkeys(p[i] for p in parts)) for i in range(3))


def write_wheel(folder: Path) -> Path:
    """Write the installed aoti-shim into ``folder`` as a wheel; return its path."""
    dist = _installed()
    site = Path(str(dist.locate_file(""))).resolve()
    scripts = {ep.name for ep in dist.entry_points if ep.group in ("console_scripts", "gui_scripts")}
    name = f"{_normalize(DIST)}-{dist.version}-{_tag(dist)}.whl"
    members: list[tuple[str, bytes]] = []
    dist_info: str | None = None
    for entry in dist.files or ():
        rel = Path(str(entry))
        if "__pycache__" in rel.parts or rel.suffix == ".pyc":
            continue
        if rel.parts[0].endswith(".dist-info"):
            dist_info = rel.parts[0]
            if rel.name in _INSTALL_ONLY:
                continue
        if rel.parts[0] == "..":
            # Outside site-packages: only the console scripts, which pip writes again.
            if rel.name in scripts:
                continue
            raise InputError(
                f"{DIST}: the installation holds {rel}, outside site-packages; build its wheel from the clone"
            )
        try:
            data = (site / rel).read_bytes()
        except OSError as e:
            raise InputError(f"{DIST}: {site / rel}: cannot read ({e.strerror or e}); {REINSTALL}") from None
        if entry.hash is not None and _record_hash(data) != f"{entry.hash.mode}={entry.hash.value}":
            raise InputError(f"{DIST}: {site / rel} changed since pip installed it; {REINSTALL}")
        members.append((rel.as_posix(), data))
    if dist_info is None:
        raise InputError(f"{DIST}: its installation lists no .dist-info; reinstall it with pip")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise AotiShimError(f"{folder}: cannot create the folder: {e.strerror or e}") from None
    target = folder / name
    part = folder / f".{name}.part"
    records = io.StringIO()
    writer = csv.writer(records, lineterminator="\n")
    try:
        with zipfile.ZipFile(part, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for arcname, data in members:
                info = zipfile.ZipInfo(arcname, _EPOCH)
                info.compress_type = zipfile.ZIP_DEFLATED
                # The installed file's mode (the shims' .so is executable).
                info.external_attr = (os.stat(site / arcname).st_mode & 0o777 | 0o100000) << 16
                zf.writestr(info, data)
                writer.writerow((arcname, _record_hash(data), str(len(data))))
            writer.writerow((f"{dist_info}/RECORD", "", ""))
            info = zipfile.ZipInfo(f"{dist_info}/RECORD", _EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, records.getvalue())
        os.replace(part, target)
    except OSError as e:
        part.unlink(missing_ok=True)
        raise AotiShimError(f"{target}: cannot write the wheel: {e.strerror or e}") from None
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    return target


def run(args: argparse.Namespace) -> int:
    output_folder(args.folder, what="wheelhouse")  # a FIFO, a file, a link to nowhere: before reading the install
    print(write_wheel(args.folder))
    return 0
