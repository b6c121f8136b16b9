"""A p-value written from its log10, readable far below float64's range."""

from __future__ import annotations

import pytest

from provenance.lib.pvalues import pvalue


@pytest.mark.parametrize(
    ("log10_p", "shown"),
    [
        (None, "–"),
        (0.0, "1"),
        (-1.0, "0.1"),
        (-3.5, "0.0003162"),
        (-4.0, "1.00e-4"),
        (-4.5, "3.16e-5"),
        (-350.2, "6.31e-351"),  # below the smallest float64
        (-12345.0, "1.00e-12345"),
    ],
)
def test_pvalue_reads_from_the_log10(log10_p, shown):
    assert pvalue(log10_p) == shown
