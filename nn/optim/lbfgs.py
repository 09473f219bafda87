"""``LBFGS``: limited-memory BFGS over all parameters as one flat vector, with an optional
strong-Wolfe line search."""

from __future__ import annotations

from collections.abc import Callable

import tensor
from tensor import Tensor, _dispatch

from ._checks import check_nonnegative
from ._line_search import strong_wolfe
from ._update_helpers import real_view
from .optimizer import Optimizer, ParamsT

__all__ = ["LBFGS"]


_HISTORY = ("old_dirs", "old_stps", "ro", "H_diag", "al")


def _as_arrays(value):
    """A state entry (a tensor, a list of them, a number, None) with the tensors as raw arrays."""
    if isinstance(value, Tensor):
        return value._data
    if isinstance(value, list):
        return [_as_arrays(v) for v in value]
    return value


class LBFGS(Optimizer):
    """L-BFGS, iteration for iteration as ``torch.optim.LBFGS`` (minFunc's algorithm).

    ``step(closure)`` runs up to ``max_iter`` iterations, re-evaluating ``closure`` (which must
    zero the gradients, compute the loss, call ``backward`` and return the loss). The state
    (directions, steps, the last flat gradient) lives in the state of the first parameter, as
    tensors, with torch's keys. A complex parameter counts as its real and imaginary parts (as
    torch). All parameters must be on one device; it holds ``history_size + 1`` copies of them.

    Raises:
        ValueError: "Invalid learning rate: ..." for a negative ``lr``, or for more than one
            parameter group.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
    ) -> None:
        check_nonnegative(lr=lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = {
            "lr": lr,
            "max_iter": max_iter,
            "max_eval": max_eval,
            "tolerance_grad": tolerance_grad,
            "tolerance_change": tolerance_change,
            "history_size": history_size,
            "line_search_fn": line_search_fn,
        }
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _xp(self):
        return self._params[0]._device.backend.xp

    def _gather_flat_grad(self):
        xp = self._xp()
        return xp.concatenate(
            [
                xp.zeros(real_view(p._data).size, dtype=real_view(p._data).dtype)
                if p.grad is None
                else real_view(p.grad._data).reshape(-1)
                for p in self._params
            ]
        )

    def _add_grad(self, step_size, update) -> None:
        offset = 0
        for p in self._params:
            data = real_view(p._data)
            data += step_size * update[offset : offset + data.size].reshape(data.shape)
            p._version_box[0] += 1
            offset += data.size

    def _as_tensors(self, value):
        """A state entry computed here (arrays, lists of them) as tensors; Python numbers as they are."""
        if isinstance(value, list):
            return [self._as_tensors(v) for v in value]
        if value is None or type(value) in (int, float):
            return value
        return _dispatch.make(self._xp().asarray(value), self._params[0]._device)

    def _set_param(self, arrays) -> None:
        for p, saved in zip(self._params, arrays):
            p._data[...] = saved
            p._version_box[0] += 1

    def step(self, closure: Callable[[], tensor.Tensor]):  # type: ignore[override]
        """Run up to ``max_iter`` iterations; returns the loss of the first closure call.

        Raises:
            RuntimeError: for a ``line_search_fn`` other than None or 'strong_wolfe'.
        """
        group = self.param_groups[0]
        lr, max_iter, max_eval = float(group["lr"]), group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        orig_loss = self._run_closure(closure)
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if abs(flat_grad).max() <= tolerance_grad:
            return orig_loss
        d, t = _as_arrays(state.get("d")), state.get("t")
        prev_flat_grad, prev_loss = _as_arrays(state.get("prev_flat_grad")), state.get("prev_loss")
        history = {key: _as_arrays(state[key]) for key in _HISTORY if key in state}
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = -flat_grad
                history.update(old_dirs=[], old_stps=[], ro=[], H_diag=1)
            else:
                d = self._direction(history, flat_grad, prev_flat_grad, d * t, group["history_size"])
            prev_flat_grad = flat_grad.copy()
            prev_loss = loss
            t = min(1.0, 1.0 / abs(flat_grad).sum()) * lr if state["n_iter"] == 1 else lr
            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:
                break
            loss, flat_grad, t, evals, opt_cond = self._advance(
                group, closure, d, t, loss, flat_grad, gtd, max_eval - current_evals, n_iter != max_iter
            )
            current_evals += evals
            state["func_evals"] += evals
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if abs(d * t).max() <= tolerance_change or abs(loss - prev_loss) < tolerance_change:
                break
        arrays = history | {"d": d, "prev_flat_grad": prev_flat_grad}
        state.update({key: self._as_tensors(value) for key, value in arrays.items()})
        state.update(t=float(t), prev_loss=prev_loss)
        return orig_loss

    @staticmethod
    def _direction(state, flat_grad, prev_flat_grad, s, history_size: int):
        """The two-loop recursion: the quasi-Newton direction from the stored curvature pairs (in
        ``state``, raw arrays, updated; ``al`` keeps ``history_size`` slots, as torch's)."""
        y = flat_grad - prev_flat_grad
        ys = y.dot(s)
        old_dirs, old_stps, ro = state["old_dirs"], state["old_stps"], state["ro"]
        if ys > 1e-10:
            if len(old_dirs) == history_size:
                old_dirs.pop(0)
                old_stps.pop(0)
                ro.pop(0)
            old_dirs.append(y)
            old_stps.append(s)
            ro.append(1.0 / ys)
            state["H_diag"] = ys / y.dot(y)
        al = state.setdefault("al", [None] * history_size)
        q = -flat_grad
        for i in range(len(old_dirs) - 1, -1, -1):
            al[i] = old_stps[i].dot(q) * ro[i]
            q -= al[i] * old_dirs[i]
        r = q * state["H_diag"]
        for i in range(len(old_dirs)):
            be_i = old_dirs[i].dot(r) * ro[i]
            r += (al[i] - be_i) * old_stps[i]
        return r

    def _advance(self, group, closure, d, t, loss, flat_grad, gtd, max_ls: int, evaluate: bool):
        """Move the parameters along ``d`` (by ``t``, or by a strong-Wolfe search); returns
        ``(loss, flat_grad, t, evaluations, gradient_small_enough)``."""
        line_search_fn = group["line_search_fn"]
        if line_search_fn is not None and line_search_fn != "strong_wolfe":
            raise RuntimeError("only 'strong_wolfe' is supported")
        evals = 0
        if line_search_fn is None:
            self._add_grad(t, d)
            if evaluate:
                loss = float(self._run_closure(closure))
                flat_grad = self._gather_flat_grad()
                evals = 1
        else:
            x_init = [p._data.copy() for p in self._params]

            def obj_func(step):
                self._add_grad(step, d)
                value = float(self._run_closure(closure))
                grad = self._gather_flat_grad()
                self._set_param(x_init)
                return value, grad

            loss, flat_grad, t, evals = strong_wolfe(obj_func, d, t, loss, flat_grad, gtd, max_ls=max_ls)
            self._add_grad(t, d)
        return loss, flat_grad, t, evals, abs(flat_grad).max() <= group["tolerance_grad"]
