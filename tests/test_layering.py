"""The package layering: tensor < autograd < nn < distrib < launch.

A module may import its own layer and the layers below it at module level; a
higher layer only lazily, inside a function (as ``tensor`` reaches ``autograd``
through ``tensor/_autograd_hooks.py``). Checked three ways: import-linter (the
contract in pyproject.toml), an AST walk of every module (which also resolves
relative imports), and fresh interpreters that show what ``import X`` loads.
Only ``tensor/_backend.py`` may import CuPy.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("tensor", "autograd", "nn", "distrib", "launch")  # lowest first
CUPY_MODULES = ("cupy", "cupyx")
CUPY_ALLOWED = {"tensor/_backend.py"}  # tensor/cuda.py goes through _backend, so it is not listed


# ---------------------------------------------------------------- the checkers
def module_name(path: Path) -> tuple[str, bool]:
    """The dotted module name of a file under ROOT, and whether it is a package ``__init__``."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts.pop()
    return ".".join(parts), is_package


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """The absolute modules a ``from ... import ...`` statement may load."""
    if node.level == 0:
        base = node.module or ""
    else:
        package = module.split(".") if is_package else module.split(".")[:-1]
        keep = len(package) - (node.level - 1)
        base = ".".join(package[:max(keep, 0)] + ([node.module] if node.module else []))
    if base:
        return [base]
    return [alias.name for alias in node.names]  # ``from .. import x`` above the top level


def _imports(body, module: str, is_package: bool, *, module_level_only: bool):
    """(line, imported module) for every import in ``body``; function bodies only if asked."""
    for node in body:
        if module_level_only and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            for target in _resolve(node, module, is_package):
                yield node.lineno, target
        elif not module_level_only and isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in ("import_module", "__import__") and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    yield node.lineno, first.value
        yield from _imports(ast.iter_child_nodes(node), module, is_package,
                            module_level_only=module_level_only)


def _layer(module: str) -> str | None:
    top = module.split(".")[0]
    return top if top in LAYERS else None


def upward_imports(source: str, module: str, is_package: bool = False) -> list[str]:
    """Module-level imports in ``source`` (the module ``module``) of a higher layer, as messages."""
    own = _layer(module)
    found = []
    for line, target in _imports(ast.parse(source).body, module, is_package, module_level_only=True):
        layer = _layer(target)
        if own and layer and LAYERS.index(layer) > LAYERS.index(own):
            found.append(f"{module}:{line} imports {target} ({layer} is above {own})")
    return found


def cupy_imports(source: str) -> list[str]:
    """Every import of CuPy in ``source``, at any depth, including ``importlib.import_module('cupy')``."""
    tree = ast.parse(source)
    return [
        f"line {line}: {target}"
        for line, target in _imports(tree.body, "", False, module_level_only=False)
        if target.split(".")[0] in CUPY_MODULES
    ]


def run_python(code: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (so ``sys.modules`` starts empty)."""
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)


def package_files(*packages: str) -> list[Path]:
    return sorted(p for pkg in packages for p in (ROOT / pkg).rglob("*.py"))


# ---------------------------------------------------------------- the checks
def test_import_linter_contract_holds():
    exe = shutil.which("lint-imports", path=os.pathsep.join([str(Path(sys.executable).parent),
                                                             os.environ.get("PATH", "")]))
    if exe is None:
        pytest.skip("lint-imports (import-linter) is not installed")
    result = subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=100)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize("package", LAYERS)
def test_no_module_level_import_of_a_higher_layer(package):
    files = package_files(package)
    assert files, f"no modules found under {package}/"
    violations = []
    for path in files:
        module, is_package = module_name(path)
        violations += upward_imports(path.read_text(encoding="utf-8"), module, is_package)
    assert violations == []


UPWARD_CASES = [
    # (source, as if in module, is a package __init__, expected reported targets)
    ("import autograd", "tensor._fake", False, ["autograd"]),
    ("import nn.modules as m", "autograd._fake", False, ["nn.modules"]),
    ("from autograd.graph import Node", "tensor.ops._fake", False, ["autograd.graph"]),
    ("from ... import autograd", "tensor.ops._fake", False, ["autograd"]),
    ("from .. import distrib", "nn", True, ["distrib"]),
    ("from ..launch import main", "distrib._fake", False, ["launch"]),
    ("try:\n    import nn\nexcept ImportError:\n    pass", "autograd._fake", False, ["nn"]),
    ("class A:\n    import distrib", "nn._fake", False, ["distrib"]),
    ("if True:\n    from launch import x", "tensor._fake", False, ["launch"]),
    # allowed: lower or same layer, relative within the package, lazy (in a function), outside packages
    ("import tensor\nfrom tensor import ops", "autograd._fake", False, []),
    ("from . import _dtype\nfrom .ops import add", "tensor._fake", False, []),
    ("from .. import registry", "tensor.ops._fake", False, []),
    ("def f():\n    import autograd", "tensor._fake", False, []),
    ("async def f():\n    from nn import Linear", "autograd._fake", False, []),
    ("import numpy, zmq, cloudpickle", "tensor._fake", False, []),
    ("import launch", "tests._fake", False, []),
]


@pytest.mark.parametrize("source, module, is_package, expected", UPWARD_CASES)
def test_checker_reports_exactly_the_upward_imports(source, module, is_package, expected):
    found = upward_imports(source, module, is_package)
    assert [msg.split(" imports ")[1].split(" (")[0] for msg in found] == expected


def test_checker_catches_import_autograd_in_tensor():
    found = upward_imports("import autograd\n", "tensor.fake_module")
    assert found == ["tensor.fake_module:1 imports autograd (autograd is above tensor)"]


@pytest.mark.parametrize("package", LAYERS)
def test_importing_a_layer_loads_no_higher_layer(package):
    higher = list(LAYERS[LAYERS.index(package) + 1:])
    code = f"import sys, {package}; loaded = [m for m in {higher!r} if m in sys.modules]; print(loaded)"
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_import_tensor_leaves_autograd_unloaded_until_backward():
    code = textwrap.dedent("""
        import sys
        import tensor
        assert "autograd" not in sys.modules, "import tensor loaded autograd"
        x = tensor.tensor([1.0, 2.0, 3.0], requires_grad=True)
        (x * x).sum().backward()
        assert "autograd" in sys.modules, "backward did not load autograd"
        assert x.grad.tolist() == [2.0, 4.0, 6.0], x.grad
        print("ok")
    """)
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_only_the_backend_imports_cupy():
    files = package_files(*LAYERS, "examples")
    offenders = {}
    for path in files:
        rel = path.relative_to(ROOT).as_posix()
        found = cupy_imports(path.read_text(encoding="utf-8"))
        if found and rel not in CUPY_ALLOWED:
            offenders[rel] = found
    assert offenders == {}
    assert cupy_imports((ROOT / "tensor/_backend.py").read_text(encoding="utf-8")), \
        "tensor/_backend.py no longer imports cupy: update CUPY_ALLOWED"


CUPY_CASES = [
    ("import cupy", ["cupy"]),
    ("import cupy.cuda as cc", ["cupy.cuda"]),
    ("from cupyx import scatter_add", ["cupyx"]),
    ("def f():\n    import cupy", ["cupy"]),
    ("import importlib\nm = importlib.import_module('cupy')", ["cupy"]),
    ("m = __import__('cupyx.scipy')", ["cupyx.scipy"]),
    ("import numpy\nfrom . import _backend", []),
    ("name = 'cupy'", []),
]


@pytest.mark.parametrize("source, expected", CUPY_CASES)
def test_cupy_checker_finds_every_form_of_import(source, expected):
    assert [msg.split(": ", 1)[1] for msg in cupy_imports(source)] == expected
