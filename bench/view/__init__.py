"""The per-question results viewer: a static HTML site built from the DuckDB results file (`ombench view`)."""

from bench.view.site import Site, build_site

__all__ = ["Site", "build_site"]
