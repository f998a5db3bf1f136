"""Figures and a Markdown/HTML report built from the DuckDB results file alone."""

from bench.report.build import Report, build_report, write_report

__all__ = ["Report", "build_report", "write_report"]
