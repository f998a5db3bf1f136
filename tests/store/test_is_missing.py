"""One rule for "this cell holds nothing" wherever results are read back (reader, report tables, diagnostics,
viewer): None, NaN of any float width, pandas' NA and NaT, numpy's NaT; never a value that merely holds NaN."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bench.store.reader import is_missing


def test_missing_cells_and_values_are_told_apart() -> None:
    for v in (None, float("nan"), np.float64("nan"), np.float32("nan"), pd.NA, pd.NaT, np.datetime64("NaT")):
        assert is_missing(v), repr(v)
    for v in (0, 0.0, False, "", "nan", [float("nan")], (None,), {}, np.array([np.nan]), np.int64(0),
              np.float32(1.5), pd.Timestamp("2024-01-01"), True):
        assert not is_missing(v), repr(v)


def test_a_dataframe_reads_back_the_same_verdicts() -> None:
    # what the report and viewer see: a bool column with a gap becomes object/NaN, an Int64 column pd.NA
    df = pd.DataFrame({"label_second": [True, None, False], "n": pd.array([1, None, 3], dtype="Int64")})
    assert [is_missing(v) for v in df["label_second"]] == [False, True, False]
    assert [is_missing(v) for v in df["n"]] == [False, True, False]
