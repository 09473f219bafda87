"""Well-known PyTorch example programs (``programs/``), run here with only their imports changed.

Each program is a torch script in the shape of pytorch/examples (or the PyTorch tutorial for
the seq2seq Transformer), on small synthetic data. Two checks per program:

- **as written**: the ported source (``_port.port``: import lines rewritten, nothing else) runs
  as ``__main__`` with its own seeds, dropout and random draws, and prints finite losses;
- **against torch**: the original source under torch and the ported source under ours, with
  the same initial weights (torch's initial ``state_dict``, loaded into ours through
  ``load_state_dict`` from the program's ``on_model`` hook) and the same random draws
  (``torch.randn``/``randn_like``/``randint`` answered from one numpy stream on both sides;
  dropout probabilities set to 0, since the two generators draw different masks), must give
  the same losses within float32 round-off after every step.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import tensor
from tests.conftest import CUDA_SKIP_REASON
from tests.porting._port import port, port_line

PROGRAMS = Path(__file__).parent / "programs"

# name -> number of losses main() returns with its defaults
CASES = {"mnist": 18, "word_lm": 26, "vae": 14, "dcgan": 16, "gpt": 13, "seq2seq": 10}
SLOW_AGAINST_TORCH = {"mnist", "word_lm", "seq2seq"}  # the two runs take over ~5 s on a shared machine


def _source(name: str) -> str:
    return (PROGRAMS / f"{name}.py").read_text()


def _load(source: str, name: str, run_name: str) -> dict:
    """Execute a program's source as a module named ``run_name`` (registered in ``sys.modules``
    while it runs, as an imported module is: dataclasses look their module up); its namespace."""
    module = types.ModuleType(run_name)
    module.__file__ = str(PROGRAMS / f"{name}.py")
    previous = sys.modules.get(run_name)
    sys.modules[run_name] = module
    try:
        exec(compile(source, module.__file__, "exec"), module.__dict__)
    finally:
        if previous is None:
            del sys.modules[run_name]
        else:
            sys.modules[run_name] = previous
    return module.__dict__


class _SameRandom(types.ModuleType):
    """The program's ``torch`` module with its random draws taken from a numpy stream, so the
    torch run and ours draw the same numbers (their generators differ by design)."""

    def __init__(self, lib: types.ModuleType, seed: int) -> None:
        super().__init__(lib.__name__)
        self._lib, self._rng = lib, np.random.default_rng(seed)

    def __getattr__(self, name: str):
        return getattr(self._lib, name)

    def _tensor(self, array: np.ndarray, device=None, dtype=None):
        out = self._lib.from_numpy(array)
        return out.to(device=device or "cpu", dtype=dtype) if dtype is not None else out.to(device or "cpu")

    def randn(self, *size, device=None, dtype=None, **_):
        size = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
        return self._tensor(self._rng.standard_normal(size).astype(np.float32), device, dtype)

    def randn_like(self, like, **_):
        return self._tensor(self._rng.standard_normal(tuple(like.shape)).astype(np.float32), like.device, like.dtype)

    def randint(self, *args, size=None, device=None, **_):
        args = list(args)
        if size is None:
            size = args.pop()
        low, high = (0, args[0]) if len(args) == 1 else args
        return self._tensor(self._rng.integers(low, high, tuple(size)), device)


def _no_dropout(model) -> None:
    """Dropout off everywhere (modules' ``p`` and float ``dropout`` attributes, as in
    ``nn.LSTM`` and ``nn.MultiheadAttention``)."""
    for module in model.modules():
        if hasattr(module, "p") and "Dropout" in type(module).__name__:
            module.p = 0.0
        if isinstance(getattr(module, "dropout", None), float):
            module.dropout = 0.0


def _run(source: str, name: str, lib, on_model) -> list[float]:
    """``main([])`` of a program with aligned random draws; prints captured."""
    namespace = _load(source, name, f"program_{name}")
    namespace["torch"] = _SameRandom(lib, seed=0)
    with contextlib.redirect_stdout(io.StringIO()):
        return namespace["main"]([], on_model=on_model)


@pytest.mark.parametrize("name", list(CASES))
def test_port_changes_only_import_lines(name):
    original, ported = _source(name).splitlines(), port(_source(name)).splitlines()
    assert len(original) == len(ported)
    changed = [(a, b) for a, b in zip(original, ported) if a != b]
    assert changed and all(a.lstrip().startswith(("import torch", "from torch")) for a, _ in changed)
    assert "torch" not in "".join(b.replace("as torch", "") for _, b in changed)


@pytest.mark.parametrize("name", list(CASES))
def test_program_runs_as_written(name, monkeypatch):
    monkeypatch.setattr(sys, "argv", [f"{name}.py"])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        _load(port(_source(name)), name, "__main__")
    numbers = [float(x) for x in re.findall(r"[Ll]oss\w*:? *(-?\d+\.\d+)", out.getvalue())]
    assert numbers and all(math.isfinite(x) for x in numbers), out.getvalue()


@pytest.mark.gpu
@pytest.mark.skipif(CUDA_SKIP_REASON is not None, reason=f"no CUDA device: {CUDA_SKIP_REASON}")
@pytest.mark.parametrize(
    "name, argv", [("mnist", []), ("vae", []), ("dcgan", ["--accel"]), ("gpt", ["--device", "cuda"])]
)
def test_program_runs_on_the_accelerator(name, argv):
    """The programs that pick the accelerator (``torch.accelerator``, or nanoGPT's float16
    autocast + GradScaler on ``--device cuda``) train there: finite losses, the full count."""
    seen = []
    namespace = _load(port(_source(name)), name, f"program_{name}")
    with contextlib.redirect_stdout(io.StringIO()):
        losses = namespace["main"](argv, on_model=lambda model: seen.append(next(model.parameters()).device.type))
    assert seen and set(seen) == {"cuda"}
    assert len(losses) == CASES[name] and all(math.isfinite(x) for x in losses)


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_AGAINST_TORCH else n for n in CASES]
)
def test_program_matches_torch(name, torch):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the machine is shared; one thread is also what ours uses per op here
    try:
        _compare(name, torch)
    finally:
        torch.set_num_threads(threads)


def _compare(name: str, torch) -> None:
    initial: list[dict] = []

    def record(model):
        _no_dropout(model)
        initial.append({k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()})

    def load(model):
        _no_dropout(model)
        model.load_state_dict({k: tensor.from_numpy(v) for k, v in initial[loaded.pop(0)].items()})

    theirs = _run(_source(name), name, torch, record)
    loaded = list(range(len(initial)))
    ours = _run(port(_source(name)), name, tensor, load)
    assert not loaded, "the ported program built fewer models than torch's"
    assert len(ours) == len(theirs) == CASES[name]
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_higher_layers_spelled_through_the_torch_module():
    # nanoGPT's torch.optim.AdamW, the tutorial's torch.nn.CrossEntropyLoss, torch.utils.data
    source = (
        "import torch\n"
        "opt = torch.optim.AdamW(torch.nn.Linear(2, 2).parameters())\n"
        "loss = torch.nn.CrossEntropyLoss()\n"
        "loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.zeros(4, 2)), batch_size=2)\n"
    )
    program = _load(port(source), "spelling", "program_spelling")
    assert type(program["opt"]).__module__ == "nn.optim.adam" and len(list(program["loader"])) == 2


@pytest.mark.parametrize(
    "line, ported",
    [
        ("import torch\n", "import tensor as torch\n"),
        ("    import torch.nn.functional as F\n", "    import nn.functional as F\n"),
        ("from torch.utils.data import DataLoader\n", "from distrib.data import DataLoader\n"),
        ("from torch import Tensor\n", "from tensor import Tensor\n"),
        ("x = torch.zeros(2)  # import torch\n", "x = torch.zeros(2)  # import torch\n"),
    ],
)
def test_port_line(line, ported):
    assert port_line(line) == ported


@pytest.mark.parametrize("line", ["import torch.nn\n", "from torch import nn\n", "from torch import optim as o\n"])
def test_port_line_refuses_imports_that_bind_torch_submodules(line):
    with pytest.raises(ValueError, match="to port it"):
        port_line(line)


def _imports_and_body(source: str) -> tuple[list[str], list[str]]:
    """A program's import lines (sorted) and its other non-blank lines (in order)."""
    lines = [line for line in source.splitlines() if line.strip()]
    is_import = [line.startswith(("import ", "from ")) for line in lines]
    return sorted(l for l, i in zip(lines, is_import) if i), [l for l, i in zip(lines, is_import) if not i]


def test_gpt_example_is_the_ported_program():
    """examples/gpt_decoder.py is programs/gpt.py ported (its imports sorted as ruff wants)."""
    example = (Path(__file__).parents[2] / "examples" / "gpt_decoder.py").read_text()
    assert _imports_and_body(example) == _imports_and_body(port(_source("gpt")))
