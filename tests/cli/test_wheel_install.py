"""The wheel installs and runs anywhere: build it, install it into a fresh venv outside the checkout, and run
`ombench run experiment=quick` from another directory. Nothing is downloaded: the wheel is built without
build isolation, installed with --no-deps --no-index, and the fresh venv sees the project venv's already
installed dependencies through a path file (never its editable install of om-bench, whose hook a plain
path entry does not run)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import duckdb
import pytest

from bench.conf import compose
from bench.config import validate

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("bench", "om_core", "pyproject.toml", "README.md")


def _sh(*cmd: str | Path, cwd: Path, env: dict[str, str] | None = None, timeout: int = 600) -> str:
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(map(str, cmd))}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def _copy_sources(dest: Path) -> None:
    """The checkout's package sources only (a build in a copy leaves no build/ or egg-info behind)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in SOURCES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=ignore)
        else:
            shutil.copy2(src, dest / name)


@pytest.mark.slow
def test_wheel_runs_quick_from_any_directory(tmp_path: Path) -> None:
    src, dist, venv, work = tmp_path / "src", tmp_path / "dist", tmp_path / "venv", tmp_path / "elsewhere"
    src.mkdir()
    work.mkdir()
    _copy_sources(src)
    _sh(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index", "-w", dist, ".",
        cwd=src)
    (wheel,) = dist.glob("om_bench-*.whl")

    _sh(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path)
    py = venv / "bin" / "python"
    _sh(sys.executable, "-m", "pip", "--python", py, "install", "-q", "--no-deps", "--no-index", wheel, cwd=tmp_path)
    site = Path(_sh(py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=work).strip())
    (site / "project-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(LITELLM_LOCAL_MODEL_COST_MAP="True", HF_HUB_OFFLINE="1", CI="1")
    where = json.loads(_sh(py, "-c", "import bench, om_core, json; print(json.dumps([bench.__file__, om_core.__file__]))",
                           cwd=work, env=env))
    assert all(Path(p).is_relative_to(site) for p in where), where  # the installed copy, not the checkout
    ombench = venv / "bin" / "ombench"
    assert _sh(ombench, "--version", cwd=work, env=env).startswith("ombench 0.")
    assert "experiment: baselines_gpt4o, mastra_gpt4o" in _sh(ombench, "run", "--help", cwd=work, env=env)

    out = _sh(ombench, "run", "experiment=quick", "run.progress=off", cwd=work, env=env)
    assert "offline engine: rule-based stand-ins, NOT an LLM" in out
    db = work / "results" / "bench.duckdb"
    con = duckdb.connect(str(db), read_only=True)
    try:
        runs = con.execute("SELECT name, count(*) FROM runs GROUP BY name").fetchall()
        samples = con.execute("SELECT count(*), count(label) FROM samples").fetchone()
    finally:
        con.close()
    strategies = len(validate(compose(["experiment=quick"])).run_strategies)  # every configured strategy
    assert strategies >= 6 and runs == [("quick", strategies)] and samples == (16 * strategies,) * 2
    assert sorted(p.name for p in work.iterdir()) == ["results"]  # nothing else written where it ran
