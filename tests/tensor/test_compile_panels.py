"""The register-tile products of tensor/_compile/panels.py (Note [Panel products]) against numpy."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from tensor._compile.panels import NARROW, PANEL_WIDTH, WIDE, pack_panels, panel_matmul  # noqa: E402

# Both widths run on any x86-64 CPU (LLVM splits a 16-float vector in two without AVX-512); the
# kernels use PANEL_WIDTH, this CPU's.
WIDTHS = pytest.mark.parametrize("width", [NARROW, WIDE])


def test_this_cpu_takes_a_known_width():
    assert PANEL_WIDTH in (NARROW, WIDE)


@WIDTHS
@pytest.mark.parametrize("transposed", [False, True])
def test_pack_panels_lays_out_columns_a_panel_width_at_a_time(transposed, width):
    n = 2 * width + 5
    w = np.arange(5 * n, dtype=np.float32).reshape((n, 5) if transposed else (5, n))
    b = w.T if transposed else w  # (k, n)
    panels = pack_panels(w, transposed, width)
    assert panels.shape == (3, 5, width)
    for p in range(3):
        columns = b[:, p * width : (p + 1) * width]
        np.testing.assert_array_equal(panels[p, :, : columns.shape[1]], columns)
    assert not panels[2, :, 5:].any()  # the padding past n


# Rows 1-17 take every mix of the 8- (wide panels only), 4-, 2- and 1-row tiles; n past a multiple
# of the width takes the partial last panel; k of 1 is a single trip through a tile's loop.
@WIDTHS
@pytest.mark.parametrize("rows", [1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 15, 17])
@pytest.mark.parametrize("k, n", [(1, 32), (3, 5), (128, 512), (512, 128), (37, 100), (64, 17)])
def test_panel_matmul_matches_numpy(rows, k, n, width):
    rng = np.random.default_rng(rows * 1000 + k + n)
    a = rng.standard_normal((rows, k + 3), dtype=np.float32)[:, 1 : k + 1]  # rows strided, unit inner stride
    w = rng.standard_normal((n, k), dtype=np.float32)
    c = np.full((rows, n + 5), 7.0, np.float32)
    panel_matmul(a, pack_panels(w, True, width), n, c[:, :n])
    expected = a.astype(np.float64) @ w.T.astype(np.float64)
    np.testing.assert_allclose(c[:, :n], expected, rtol=1e-5, atol=1e-5 * np.sqrt(k))
    assert (c[:, n:] == 7).all()  # nothing written past n
    again = np.empty((rows, n), np.float32)
    panel_matmul(a, pack_panels(np.ascontiguousarray(w.T), False, width), n, again)
    np.testing.assert_array_equal(again, c[:, :n])  # the same panels either way


@WIDTHS
def test_panel_matmul_of_an_empty_inner_dimension_is_zeros(width):
    c = np.full((3, 20), 7.0, np.float32)
    panel_matmul(np.empty((3, 0), np.float32), pack_panels(np.empty((0, 20), np.float32), False, width), 20, c)
    assert not c.any()
