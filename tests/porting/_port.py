"""Port a torch program to this framework the way a user does: change its import lines and
nothing else.

``port(source)`` rewrites each ``import torch...`` / ``from torch... import ...`` line by the
module table below (the longest prefix wins) and leaves every other line as it is. The table is
README's: ``torch`` is ``tensor``, ``torch.nn`` is ``nn``, ``torch.optim`` is ``nn.optim``,
``torch.utils.data`` is ``distrib.data``.
"""

from __future__ import annotations

import re

MODULES = {
    "torch": "tensor",
    "torch.nn": "nn",
    "torch.optim": "nn.optim",
    "torch.utils.data": "distrib.data",
}

_IMPORT = re.compile(r"^(?P<indent>\s*)import (?P<module>torch(?:\.\w+)*)(?: as (?P<alias>\w+))?\s*$")
_FROM = re.compile(r"^(?P<indent>\s*)from (?P<module>torch(?:\.\w+)*) import (?P<names>.+)$")


def _ours(module: str) -> str:
    """Our module for a torch module path: the longest mapped prefix, replaced."""
    parts = module.split(".")
    for cut in range(len(parts), 0, -1):
        prefix = ".".join(parts[:cut])
        if prefix in MODULES:
            return ".".join([MODULES[prefix], *parts[cut:]])
    raise ValueError(f"no counterpart for module {module!r}")


def port_line(line: str) -> str:
    """One source line with a torch import rewritten to ours; any other line unchanged.

    Raises:
        ValueError: for ``import torch.x`` without ``as`` (it binds ``torch``, whose ``x`` is not ours)
            or ``from torch import nn`` (or ``optim``, ``utils``: write ``import torch.nn as nn``).
    """
    if match := _IMPORT.match(line):
        module, alias, indent = match["module"], match["alias"], match["indent"]
        if module == "torch":
            return f"{indent}import tensor as {alias or 'torch'}\n"
        if alias is None:
            raise ValueError(f"write `import {module} as <name>` to port it: {line.strip()!r}")
        return f"{indent}import {_ours(module)} as {alias}\n"
    if match := _FROM.match(line):
        if match["module"] == "torch":
            names = {name.split(" as ")[0].strip() for name in match["names"].split(",")}
            if names & {"nn", "optim", "utils"}:
                raise ValueError(f"write `import torch.<module> as <name>` to port it: {line.strip()!r}")
        return f"{match['indent']}from {_ours(match['module'])} import {match['names']}\n"
    return line


def port(source: str) -> str:
    """``source`` with each torch import line rewritten to ours (see ``port_line``)."""
    return "".join(port_line(line) for line in source.splitlines(keepends=True))
