"""The names ``smoke --model`` knows, and the nearest one to a name it does not.

Known: the bundled models (``mlp``) and the zoo's callables by their full spec
(``aoti_shim.smoke.zoo:resnet18``, ``..._bf16``). A user typing the zoo's short name
(``resnet18``) or misspelling one is pointed at the spec that works.
"""

from __future__ import annotations

import difflib

from aoti_shim.smoke import zoo
from aoti_shim.smoke.models import BUNDLED

ZOO_MODULE = "aoti_shim.smoke.zoo"


def zoo_specs() -> tuple[str, ...]:
    """Every zoo model's ``--model`` value, in every dtype."""
    return tuple(zoo.spec(name, dtype) for name in zoo.MODELS for dtype in zoo.DTYPES)


def _by_short_name() -> dict[str, str]:
    """Each known model by the name a user may type: a bundled name as is, a zoo
    callable by its attribute (``resnet18``) and by its full spec."""
    names = {name: name for name in BUNDLED}
    for full in zoo_specs():
        names[full.partition(":")[2]] = full
        names[full] = full
    return names


def nearest(given: str) -> str | None:
    """The known ``--model`` value nearest to ``given`` (None: nothing close). A zoo
    callable's short name gives its spec; ``module:callable`` is also matched by its callable."""
    names = _by_short_name()
    if given in names and names[given] != given:
        return names[given]
    tail = given.rpartition(":")[2]
    for text in dict.fromkeys((given, tail)):
        close = difflib.get_close_matches(text, list(names), n=1, cutoff=0.75)
        if close and names[close[0]] != given:
            return names[close[0]]
    return None


def hint(given: str) -> str:
    """``"; did you mean aoti_shim.smoke.zoo:resnet18?"`` or empty."""
    found = nearest(given)
    return f"; did you mean {found}?" if found is not None else ""


def help_text() -> str:
    """``--model``'s help: the bundled names and the zoo, from the code that defines them."""
    return (
        f"a bundled model ({', '.join(BUNDLED)}), a zoo model ({ZOO_MODULE}:NAME, NAME one of "
        f"{', '.join(zoo.MODELS)}; NAME_bf16 for bfloat16; needs the [zoo] extra) or your own: a callable "
        "returning (module, example_inputs); repeatable (default: the bundled set)"
    )
