"""A throwaway local PostgreSQL server for the storage tests (or OM_PG_DSN when set)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

PG_BIN = Path("/usr/lib/postgresql/15/bin")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def postgres_dsn() -> Iterator[str]:
    """OM_PG_DSN, or a throwaway local server (initdb as the `postgres` user); skip when neither works."""
    if os.environ.get("OM_PG_DSN"):
        yield os.environ["OM_PG_DSN"]
        return
    pytest.importorskip("psycopg", reason="psycopg not installed")
    initdb = shutil.which("initdb") or str(PG_BIN / "initdb")
    pg_ctl = shutil.which("pg_ctl") or str(PG_BIN / "pg_ctl")
    if not Path(initdb).exists():
        pytest.skip("no Postgres server: set OM_PG_DSN or install postgresql (initdb not found)")
    run_as = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    base = Path(tempfile.mkdtemp(prefix="om_pg_"))
    data = base / "data"
    port = _free_port()
    try:
        if run_as:
            shutil.chown(base, user="postgres")
        subprocess.run([*run_as, initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"],
                       check=True, capture_output=True, timeout=120)
        subprocess.run([*run_as, pg_ctl, "-D", str(data), "-l", str(base / "log"), "-w", "-t", "60",
                        "-o", f"-p {port} -k {base} -c listen_addresses='' -c fsync=off", "start"],
                       check=True, capture_output=True, timeout=90)
    except (subprocess.SubprocessError, OSError, LookupError) as exc:
        shutil.rmtree(base, ignore_errors=True)
        pytest.skip(f"no Postgres server: set OM_PG_DSN, or a local one could not start ({exc})")
    try:
        yield f"host={base} port={port} user=postgres dbname=postgres"
    finally:
        subprocess.run([*run_as, pg_ctl, "-D", str(data), "-m", "immediate", "stop"], capture_output=True, timeout=60)
        shutil.rmtree(base, ignore_errors=True)
