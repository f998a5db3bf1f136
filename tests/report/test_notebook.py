"""notebooks/analysis.ipynb runs from a repository's root and from its notebooks/ folder (finding
results/bench.duckdb on its own), draws its plots inline, and raises nothing, on a small DB the test builds."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.helpers.results_db import LABELS, build_small_db

ROOT = Path(__file__).resolve().parents[2]
NB = ROOT / "notebooks" / "analysis.ipynb"


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """A repository-shaped folder: pyproject.toml, notebooks/analysis.ipynb, results/bench.duckdb."""
    pytest.importorskip("nbformat")
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec("python3")
    except NoSuchKernel:
        pytest.skip("no python3 Jupyter kernel registered (python -m ipykernel install --sys-prefix)")
    d = tmp_path_factory.mktemp("repo")
    (d / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (d / "notebooks").mkdir()
    shutil.copy(NB, d / "notebooks" / NB.name)
    (d / "results").mkdir()
    build_small_db(d / "results" / "bench.duckdb")
    return d


@pytest.mark.slow
@pytest.mark.parametrize("where", ["root", "notebooks"])
def test_notebook_executes_with_inline_plots(repo, where, monkeypatch):
    import nbclient
    import nbformat

    monkeypatch.delenv("OMBENCH_DB", raising=False)
    monkeypatch.delenv("MPLBACKEND", raising=False)
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cwd = repo if where == "root" else repo / "notebooks"
    nb = nbformat.read(repo / "notebooks" / NB.name, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(cwd)}})
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError:
        raise
    except RuntimeError as exc:  # the kernel could not start
        pytest.skip(f"Jupyter kernel could not start: {exc}")
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    text = "".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", "")) for o in outputs)
    assert str(repo / "results" / "bench.duckdb") in text  # found on its own from either folder
    assert all(label in text for label in LABELS.values())
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 4  # accuracy, prefill, prompt over turns, OM context split: drawn inline
    assert not any(o.get("output_type") == "error" for o in outputs)
