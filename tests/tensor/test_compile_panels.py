"""The register-tile products of tensor/_compile/panels.py (Note [Panel products]) against numpy."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from tensor._compile.panels import PANEL_WIDTH, pack_panels, panel_matmul  # noqa: E402


@pytest.mark.parametrize("transposed", [False, True])
def test_pack_panels_lays_out_columns_sixteen_at_a_time(transposed):
    w = np.arange(5 * 37, dtype=np.float32).reshape((37, 5) if transposed else (5, 37))
    b = w.T if transposed else w  # (k, n) = (5, 37)
    panels = pack_panels(w, transposed)
    assert panels.shape == (3, 5, PANEL_WIDTH)
    for p in range(3):
        columns = b[:, p * PANEL_WIDTH : (p + 1) * PANEL_WIDTH]
        np.testing.assert_array_equal(panels[p, :, : columns.shape[1]], columns)
    assert not panels[2, :, 37 - 2 * PANEL_WIDTH :].any()  # the padding past n


# Rows 1-9 and 13 take every mix of the 4-, 2- and 1-row tiles; n past a multiple of 16 takes the
# partial last panel; k of 1 is a single trip through a tile's loop.
@pytest.mark.parametrize("rows", [1, 2, 3, 4, 5, 6, 7, 8, 9, 13])
@pytest.mark.parametrize("k, n", [(1, 16), (3, 5), (128, 512), (512, 128), (37, 100), (64, 17)])
def test_panel_matmul_matches_numpy(rows, k, n):
    rng = np.random.default_rng(rows * 1000 + k + n)
    a = rng.standard_normal((rows, k + 3), dtype=np.float32)[:, 1 : k + 1]  # rows strided, unit inner stride
    w = rng.standard_normal((n, k), dtype=np.float32)
    c = np.full((rows, n + 5), 7.0, np.float32)
    panel_matmul(a, pack_panels(w, True), n, c[:, :n])
    expected = a.astype(np.float64) @ w.T.astype(np.float64)
    np.testing.assert_allclose(c[:, :n], expected, rtol=1e-5, atol=1e-5 * np.sqrt(k))
    assert (c[:, n:] == 7).all()  # nothing written past n
    again = np.empty((rows, n), np.float32)
    panel_matmul(a, pack_panels(np.ascontiguousarray(w.T), False), n, again)
    np.testing.assert_array_equal(again, c[:, :n])  # the same panels either way


def test_panel_matmul_of_an_empty_inner_dimension_is_zeros():
    c = np.full((3, 20), 7.0, np.float32)
    panel_matmul(np.empty((3, 0), np.float32), pack_panels(np.empty((0, 20), np.float32), False), 20, c)
    assert not c.any()
