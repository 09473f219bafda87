"""A backend is its transport and nothing else (Note [Peer failures] in ``distrib/backends/base.py``).

Backends are ``distrib/backends/<name>_backend.py``. A private helper module belongs to the backend
its name starts with (``_mpi_setup.py``: mpi), or, without such a prefix, to the one backend that
imports it (``_shm.py``: zmq). ``__init__.py`` and ``base.py`` are shared by all. What one backend
shares with another must move down to a shared module, so:

* no module of one backend imports another backend's private module, or a private name of any of
  its modules (read from the source, imports inside functions included);
* importing one backend's module loads no module of another backend (in a fresh interpreter):
  loading ``mpi`` must not pull in the zmq transport.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = ROOT / "distrib" / "backends"
PACKAGE = "distrib.backends"
SHARED = {"__init__", "base"}


def _imported(path: Path) -> list[tuple[int, str, str | None]]:
    """``(line, module stem, name or None)`` for each import of a sibling module in ``path``: the
    name imported from it, or None where the module itself is imported."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name.rsplit(".", 1)[1], None) for a in node.names
                      if a.name.startswith(PACKAGE + ".")]
        elif isinstance(node, ast.ImportFrom):
            module = PACKAGE + (f".{node.module}" if node.module else "") if node.level == 1 else node.module
            if module == PACKAGE:
                found += [(node.lineno, a.name, None) for a in node.names]
            elif module and module.startswith(PACKAGE + "."):
                found += [(node.lineno, module.rsplit(".", 1)[1], a.name) for a in node.names]
    return found


def _families(directory: Path) -> tuple[dict[str, str | None], list[str]]:
    """Each module's backend (None: shared), and the problems in deciding it."""
    stems = {p.stem for p in directory.glob("*.py")}
    backends = {s.removesuffix("_backend") for s in stems if s.endswith("_backend")}
    family: dict[str, str | None] = {s: None for s in SHARED & stems}
    for stem in stems - SHARED:
        owners = [b for b in backends if stem in (f"{b}_backend", f"_{b}") or stem.startswith(f"_{b}_")]
        if owners:
            family[stem] = owners[0]
    importers = {s: _imported(directory / f"{s}.py") for s in stems}
    problems = []
    for stem in sorted(stems - set(family)):  # helpers named for no backend: who imports them
        users = {family.get(s) for s, imports in importers.items() for _, target, _ in imports if target == stem}
        users.discard(None)
        if len(users) > 1:
            problems.append(f"{stem}.py is used by the backends {sorted(users)}: move it to a shared module")
        family[stem] = users.pop() if len(users) == 1 else None
    return family, problems


def violations(directory: Path) -> list[str]:
    """Every import by one backend's module of another backend's private module or private name."""
    family, problems = _families(directory)
    for stem in sorted(family):
        for line, target, name in _imported(directory / f"{stem}.py"):
            theirs = family.get(target)
            if theirs is None or theirs == family[stem]:
                continue
            if target.startswith("_") or (name or "").startswith("_"):
                problems.append(f"{stem}.py:{line} imports {target}{'.' + name if name else ''}, private to "
                                f"the {theirs} backend: move what both need to a shared module (e.g. base.py)")
    return problems


def test_no_backend_imports_another_backends_private_names():
    assert violations(BACKENDS) == []


def test_the_check_catches_a_borrowed_private_name(tmp_path):
    """What the mpi backend once did: it took ``_alive`` from the zmq backend's shared memory and
    ``_host_id`` from the zmq backend itself (and here, a helper of the zmq transport)."""
    sources = {
        "base.py": "",
        "zmq_backend.py": "from . import _shm\nfrom ._zmq_transport import header\n\ndef _host_id():\n    pass\n",
        "_shm.py": "def _alive(pid):\n    pass\n",
        "_zmq_transport.py": "def header():\n    pass\n",
        "mpi_backend.py": "from ._shm import _alive\nfrom ._zmq_transport import header\nfrom .base import Backend\n\n"
                          "def f():\n    from distrib.backends.zmq_backend import _host_id\n",
    }
    for name, text in sources.items():
        (tmp_path / name).write_text(text)
    found = violations(tmp_path)
    expected = ["_shm.py is used by the backends ['mpi', 'zmq']: move it",
                "mpi_backend.py:2 imports _zmq_transport.header, private to the zmq backend",
                "mpi_backend.py:6 imports zmq_backend._host_id, private to the zmq backend"]
    assert len(found) == len(expected) and all(f.startswith(e) for f, e in zip(found, expected)), found


def test_a_helper_two_backends_use_must_be_shared(tmp_path):
    sources = {"base.py": "", "_util.py": "", "zmq_backend.py": "from . import _util\n",
               "mpi_backend.py": "from ._util import thing\n"}
    for name, text in sources.items():
        (tmp_path / name).write_text(text)
    assert violations(tmp_path) == ["_util.py is used by the backends ['mpi', 'zmq']: move it to a shared module"]


def _loaded_by(module: str) -> list[str]:
    """The ``distrib.backends`` modules a fresh interpreter has loaded after importing ``module``."""
    code = textwrap.dedent(f"""
        import json, sys
        import {module}
        print(json.dumps(sorted(m for m in sys.modules if m.startswith("{PACKAGE}."))))
    """)
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-4000:]
    return json.loads(run.stdout.splitlines()[-1])


@pytest.mark.parametrize("backend", sorted(p.stem for p in BACKENDS.glob("*_backend.py")))
def test_importing_a_backend_loads_no_other_backend(backend):
    family, _ = _families(BACKENDS)
    mine = family[backend]
    loaded = [m.rsplit(".", 1)[1] for m in _loaded_by(f"{PACKAGE}.{backend}")]
    assert [m for m in loaded if family.get(m) not in (None, mine)] == []
    if mine == "mpi":  # the case issue 18 named: mpi must not pull in the zmq transport
        assert "_zmq_transport" not in loaded and "zmq_backend" not in loaded
