"""The honest coverage table (issue 16): which public PyTorch functions and classes exist here.

Lists the public callables of ``torch``, ``torch.linalg``, ``torch.fft``, ``torch.nn.functional``,
the module classes of ``torch.nn`` and ``torch.optim`` (with ``lr_scheduler`` and ``swa_utils``),
drops the names that are GPU-vendor, sparse, quantized, JIT/TorchScript or C++-internal specific
(the filter below, each rule with its reason), and checks each remaining name in our
counterpart namespace. It prints the percentage per namespace and rewrites the generated section
of ``docs/coverage.md`` (between the markers), keeping the hand-written notes around it.

A name counts as covered when it exists here; whether its results match is what the tests under
``tests/`` check (the table does not run anything).

    .venv/bin/python scripts/coverage_table.py            # print and rewrite docs/coverage.md
    .venv/bin/python scripts/coverage_table.py --check    # print only
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "coverage.md"
BEGIN, END = "<!-- BEGIN GENERATED COVERAGE -->", "<!-- END GENERATED COVERAGE -->"

# (regex on the name, why the name is outside the scope). Applied to every namespace.
EXCLUDED = [
    (
        r"cudnn|miopen|mkldnn|fbgemm|cuda|_xpu|xpu_|mps|_xla|xla_|_ipu|ipu_|vulkan|mtia|nnpack|hip|scaled_mm"
        r"|grouped_mm|^ScalingType$|^SwizzleType$|^AcceleratorError$|^OutOfMemoryError$",
        "GPU vendor",
    ),
    (
        r"sparse|_coo|coo_|csr|csc|bsr|bsc|^spmm$|^smm$|^sspaddmm$|^hspmm$|^dsmm$|^hsmm$|^saddmm$|indices_copy$"
        r"|^values_copy$",
        "sparse",
    ),
    (r"quant|qint|quint|^q_|int_repr|qscheme|qparams|fake_quant|^dequantize$", "quantized"),
    (
        r"^(fork|wait|parse_ir|parse_schema|parse_type_comment|merge_type_from_type_comment|import_ir_module"
        r"|import_ir_module_from_buffer|unify_type_list|script_if_tracing|is_scripting|cpp|jit)$"
        r"|^sym_|^Sym",
        "JIT / TorchScript / symbolic shapes",
    ),
    (
        r"^(handle_torch_function|has_torch_function|has_torch_function_unary|has_torch_function_variadic"
        r"|boolean_dispatch|assert_int_or_pair|classproperty|typename|compiled_with_cxx11_abi)$",
        "C++ dispatch / build internals",
    ),
]

# User-facing classes that torch exports from torch._C (the other torch._C classes are JIT / C++
# internals: the IR, script types, dispatch keys, ...).
C_CLASSES_KEPT = {
    "Tensor",
    "Size",
    "Generator",
    "device",
    "dtype",
    "finfo",
    "iinfo",
    "Stream",
    "Event",
    "layout",
    "memory_format",
}

# Known reasons for names that are in scope but missing; the rest say "not implemented yet".
REASONS = [
    (r"^Lazy", "lazy modules (shapes inferred on the first call) are not implemented"),
    (r"_copy$", "view-copy variant of a view not provided here"),
    (r"Storage$", "storage classes are C++ internals; tensors expose untyped_storage-free numpy data"),
    (
        r"^(Float|Double|Half|BFloat16|Long|Int|Short|Char|Byte|Bool)Tensor$",
        "legacy typed-tensor classes; use dtype= (Tensor.type() names them)",
    ),
    (r"^(vmap|func)$", "torch.func transforms are not implemented"),
    (r"^(stft|istft)$", "short-time Fourier transform not implemented"),
    (
        r"^(lstm|gru|rnn_tanh|rnn_relu|lstm_cell|gru_cell|rnn_tanh_cell|rnn_relu_cell)$",
        "ATen RNN entry points; use nn.LSTM/GRU/RNN (and their cells)",
    ),
    (
        r"^native_|_backward|^batch_norm_(stats|elemt|gather|update|backward)|^_?convolution$|^conv_tbc$",
        "ATen-internal kernels exposed by torch; the public forms exist",
    ),
    (r"RNN|LSTM|GRU", "recurrent modules are owned by the RNN work (packed input pending)"),
]


@dataclass
class Namespace:
    """One PyTorch namespace, how to list it, and where ours lives."""

    title: str
    torch_module: str
    ours: list[str]
    kind: str = "callables"  # or "modules": nn.Module subclasses only
    names: list[str] = field(default_factory=list)


NAMESPACES = [
    Namespace("torch", "torch", ["tensor"]),
    Namespace("torch.linalg", "torch.linalg", ["tensor.linalg"]),
    Namespace("torch.fft", "torch.fft", ["tensor.fft"]),
    Namespace("torch.nn.functional", "torch.nn.functional", ["nn.functional"]),
    Namespace("torch.nn (module classes)", "torch.nn", ["nn"], kind="modules"),
    Namespace("torch.optim", "torch.optim", ["nn.optim"]),
    Namespace("torch.optim.lr_scheduler", "torch.optim.lr_scheduler", ["nn.optim.lr_scheduler"]),
    Namespace("torch.optim.swa_utils", "torch.optim.swa_utils", ["nn.optim.swa_utils"]),
]


def excluded_reason(name: str) -> str | None:
    """Why ``name`` is outside the scope, or None."""
    for pattern, reason in EXCLUDED:
        if re.search(pattern, name):
            return reason
    return None


def missing_reason(name: str, title: str) -> str:
    """A known reason ``name`` is missing here (checked against what we have under other names)."""
    if title == "torch":
        functional = importlib.import_module("nn.functional")
        if hasattr(functional, name):
            return f"`nn.functional.{name}` exists; `torch.{name}` has ATen's different arguments and results"
        tensor_cls = importlib.import_module("tensor").Tensor
        if hasattr(tensor_cls, name):
            return f"exists as the method `Tensor.{name}`"
    for pattern, reason in REASONS:
        if re.search(pattern, name):
            return reason
    return "not implemented yet"


def public_names(namespace: Namespace, torch) -> tuple[list[str], dict[str, str]]:
    """The in-scope names of a torch namespace, and the excluded ones with their reason."""
    module = importlib.import_module(namespace.torch_module)
    candidates = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
    kept, excluded = [], {}
    for name in sorted(set(candidates)):
        obj = getattr(module, name, None)
        if obj is None or inspect.ismodule(obj) or not callable(obj) or name.startswith("_"):
            continue
        origin = getattr(obj, "__module__", "") or ""
        if namespace.kind == "modules":
            if not (inspect.isclass(obj) and issubclass(obj, torch.nn.Module)):
                continue
        elif not (origin.startswith("torch") or namespace.torch_module == "torch"):
            continue  # typing helpers and other re-exports
        if namespace.torch_module != "torch" and name == "Tensor":
            continue  # the class re-exported by a submodule
        from_c = origin.startswith("torch._C") or (namespace.torch_module == "torch" and hasattr(torch._C, name))
        if inspect.isclass(obj) and from_c and name not in C_CLASSES_KEPT:
            excluded[name] = "JIT / C++ internal class"
            continue
        if name.endswith("Storage") or name in ("TypedStorage", "UntypedStorage"):
            excluded[name] = "storage classes (C++ internals)"
            continue
        reason = excluded_reason(name)
        if reason:
            excluded[name] = reason
            continue
        kept.append(name)
    return kept, excluded


def exists_here(name: str, ours: list[str]) -> bool:
    for path in ours:
        try:
            module = importlib.import_module(path)
        except ImportError:
            continue
        if hasattr(module, name):
            return True
    return False


def build(torch) -> tuple[list[tuple], dict[str, dict[str, str]]]:
    """Per namespace: (title, covered, total, missing names); and the excluded names."""
    summary, excluded_all = [], {}
    for namespace in NAMESPACES:
        names, excluded = public_names(namespace, torch)
        missing = [n for n in names if not exists_here(n, namespace.ours)]
        summary.append((namespace.title, len(names) - len(missing), len(names), missing, namespace.ours[0]))
        excluded_all[namespace.title] = excluded
    return summary, excluded_all


def render(summary, excluded_all, torch_version: str) -> str:
    lines = [
        BEGIN,
        "",
        "## Generated coverage table",
        "",
        f"Generated by `scripts/coverage_table.py` against torch {torch_version}. A name is covered "
        "when it exists in our namespace; the tests compare results with torch.",
        "",
        "| torch namespace | ours | covered | in scope | % |",
        "|---|---|---|---|---|",
    ]
    total_cov = total = 0
    for title, covered, count, _, ours in summary:
        total_cov, total = total_cov + covered, total + count
        lines.append(f"| `{title}` | `{ours}` | {covered} | {count} | {100 * covered / max(count, 1):.1f} |")
    lines.append(f"| **all** | | {total_cov} | {total} | {100 * total_cov / max(total, 1):.1f} |")
    counts: dict[str, int] = {}
    for excluded in excluded_all.values():
        for reason in excluded.values():
            counts[reason] = counts.get(reason, 0) + 1
    lines += [
        "",
        "Out of scope (not counted), by the filter in the script: "
        + ", ".join(f"{reason} ({count})" for reason, count in sorted(counts.items()))
        + ".",
        "",
    ]
    for title, _, _, missing, _ in summary:
        if not missing:
            continue
        lines += [f"### Missing from `{title}` ({len(missing)})", "", "| name | reason |", "|---|---|"]
        lines += [f"| `{name}` | {missing_reason(name, title)} |" for name in missing]
        lines.append("")
    lines.append(END)
    return "\n".join(lines) + "\n"


def write_doc(section: str) -> None:
    text = DOC.read_text() if DOC.exists() else "# Coverage of the PyTorch API (issue 16)\n\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1].lstrip("\n")
        text = head + section + ("\n" + tail if tail else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    DOC.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="print the percentages only; do not write the doc")
    args = parser.parse_args(argv)
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        print("coverage_table.py needs torch as the reference (pip install torch)", file=sys.stderr)
        return 2
    sys.path.insert(0, str(ROOT))
    summary, excluded_all = build(torch)
    for title, covered, count, _, ours in summary:
        print(f"{title:28s} -> {ours:24s} {covered:4d}/{count:4d}  {100 * covered / max(count, 1):5.1f}%")
    covered = sum(s[1] for s in summary)
    count = sum(s[2] for s in summary)
    print(f"{'all':28s}    {'':24s} {covered:4d}/{count:4d}  {100 * covered / max(count, 1):5.1f}%")
    if not args.check:
        write_doc(render(summary, excluded_all, torch.__version__))
        print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
