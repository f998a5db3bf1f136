"""notebooks/analysis.ipynb executes against a small DB given by OMBENCH_DB."""

import os
from pathlib import Path

import pytest

from tests.helpers.results_db import build_small_db

NB = Path(__file__).resolve().parents[2] / "notebooks" / "analysis.ipynb"


@pytest.mark.slow  # a Jupyter kernel subprocess
def test_notebook_executes(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec("python3")
    except NoSuchKernel:
        pytest.skip("no python3 Jupyter kernel registered (python -m ipykernel install --sys-prefix)")
    db = tmp_path / "nb.duckdb"
    labels = build_small_db(db)
    monkeypatch.setenv("OMBENCH_DB", str(db))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    root = str(NB.parents[1])
    monkeypatch.setenv("PYTHONPATH", root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    nb = nbformat.read(NB, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    try:
        client.execute()
    except RuntimeError as exc:  # kernel failed to start
        pytest.skip(f"Jupyter kernel could not start: {exc}")
    outputs = "".join(
        str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
        for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
    )
    assert str(db) in outputs
    for rk in labels:
        assert rk in outputs
    assert not any(o.get("output_type") == "error" for c in nb.cells if c.cell_type == "code" for o in c.outputs)
