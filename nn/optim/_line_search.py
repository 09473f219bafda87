"""The strong-Wolfe line search of ``LBFGS`` (minFunc's bracketing and zoom, as PyTorch runs it).

Works on flat raw arrays (numpy or CuPy): ``obj_func(t)`` returns the loss and flat gradient at
``x + t * d``; the scalars it compares are 0-d arrays or floats.
"""

from __future__ import annotations

from dataclasses import dataclass


def cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser of the cubic through ``(x1, f1)``, ``(x2, f2)`` with slopes ``g1``, ``g2``,
    clamped to ``bounds`` (the interval's midpoint when the cubic has no minimum)."""
    xmin_bound, xmax_bound = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square < 0:
        return (xmin_bound + xmax_bound) / 2.0
    d2 = d2_square**0.5
    if x1 <= x2:
        min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(min_pos, xmin_bound), xmax_bound)


@dataclass
class _Point:
    """A trial step ``t`` with its loss, flat gradient and directional derivative."""

    t: float
    f: float
    g: object
    gtd: float


def strong_wolfe(obj_func, d, t, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """Find a step ``t`` along ``d`` meeting the strong Wolfe conditions.

    Returns ``(loss, flat_grad, t, evaluations)``.
    """
    d_norm = abs(d).max()
    start = _Point(0, f, g.copy(), gtd)
    prev = start
    f_new, g_new = obj_func(t)
    evals, ls_iter = 1, 0
    new = _Point(t, f_new, g_new, g_new.dot(d))
    bracket, done = None, False
    while ls_iter < max_ls:
        if new.f > (f + c1 * new.t * gtd) or (ls_iter > 1 and new.f >= prev.f):
            bracket = [prev, _Point(new.t, new.f, new.g.copy(), new.gtd)]
            break
        if abs(new.gtd) <= -c2 * gtd:
            bracket, done = [new], True
            break
        if new.gtd >= 0:
            bracket = [prev, _Point(new.t, new.f, new.g.copy(), new.gtd)]
            break
        min_step = new.t + 0.01 * (new.t - prev.t)
        t_next = cubic_interpolate(prev.t, prev.f, prev.gtd, new.t, new.f, new.gtd, bounds=(min_step, new.t * 10))
        prev = _Point(new.t, new.f, new.g.copy(), new.gtd)
        f_new, g_new = obj_func(t_next)
        evals += 1
        new = _Point(t_next, f_new, g_new, g_new.dot(d))
        ls_iter += 1
    if ls_iter == max_ls:
        bracket = [start, new]
    if done:
        return bracket[0].f, bracket[0].g, bracket[0].t, evals
    return _zoom(obj_func, d, bracket, f, gtd, c1, c2, tolerance_change, max_ls, ls_iter, d_norm, evals)


def _zoom(obj_func, d, bracket, f, gtd, c1, c2, tolerance_change, max_ls, ls_iter, d_norm, evals):
    """Shrink ``bracket`` (two points) around a step that meets the strong Wolfe conditions."""
    insuf_progress = False
    low, high = (0, 1) if bracket[0].f <= bracket[-1].f else (1, 0)
    while ls_iter < max_ls:
        if abs(bracket[1].t - bracket[0].t) * d_norm < tolerance_change:
            break
        t = cubic_interpolate(bracket[0].t, bracket[0].f, bracket[0].gtd, bracket[1].t, bracket[1].f, bracket[1].gtd)
        top, bottom = max(bracket[0].t, bracket[1].t), min(bracket[0].t, bracket[1].t)
        eps = 0.1 * (top - bottom)
        if min(top - t, t - bottom) < eps:
            if insuf_progress or t >= top or t <= bottom:
                t = top - eps if abs(t - top) < abs(t - bottom) else bottom + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(t)
        evals += 1
        ls_iter += 1
        new = _Point(t, f_new, g_new.copy(), g_new.dot(d))
        if new.f > (f + c1 * t * gtd) or new.f >= bracket[low].f:
            bracket[high] = new
            low, high = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
        else:
            if abs(new.gtd) <= -c2 * gtd:
                bracket[low] = new
                break
            if new.gtd * (bracket[high].t - bracket[low].t) >= 0:
                bracket[high] = bracket[low]
            bracket[low] = new
    best = bracket[low]
    return best.f, best.g, best.t, evals
