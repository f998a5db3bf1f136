"""The viewer's compare page on a real run (LongMemEval oracle, offline engine: OM and full context on the same 12
questions), in a real headless Chromium: the questions one run got right and the other wrong, both ways, exactly as
the results file holds them, with links to their question pages; runs of different datasets are not compared."""

from __future__ import annotations

from urllib.parse import quote, unquote

import pytest

from bench.cli import main
from bench.store import Results
from tests.view.test_view import _browser

pytestmark = [pytest.mark.slow, pytest.mark.realdata]  # a real run, then a real browser


@pytest.fixture(scope="module")
def site(tmp_path_factory, real_data_dir):
    from bench.runner.app import run_job
    from tests.helpers.runner import compose_cfg

    tmp = tmp_path_factory.mktemp("compare")
    run_job(compose_cfg(tmp, "dataset=longmemeval_oracle", f"dataset.data_dir={real_data_dir}",
                        "dataset.stratified=12", "run_strategies=[om,full_context]",
                        "strategies.om.params.finalize=true"))
    run_job(compose_cfg(tmp, "dataset.limit=3", "run_strategies=[oracle]"))  # another dataset (synthetic)
    db = tmp / "bench.duckdb"
    assert main(["view", "--db", str(db), "--out", str(tmp / "view")]) == 0
    return db, tmp / "view"


def _qids(page, table: str) -> list[str]:
    rows = page.locator(f"{table} tr[data-qid]")
    return [rows.nth(i).get_attribute("data-qid") for i in range(rows.count())]


def test_compare_page_lists_what_one_run_got_right_and_the_other_wrong(site, tmp_path):
    pw, exe = _browser()
    db, out = site
    with Results(db) as res:
        names = {v: k for k, v in res.names().items()}
        om = next(k for k in res.run_keys() if k.startswith("om-"))
        fc = next(k for k in res.run_keys() if k.startswith("full_context-"))
        other = next(k for k in res.run_keys() if k.startswith("oracle-"))
        lab = {k: dict(zip(res.samples(k).question_id, res.samples(k).label)) for k in (om, fc)}
    om_only = sorted(q for q in lab[om] if lab[om][q] is True and lab[fc].get(q) is False)
    fc_only = sorted(q for q in lab[fc] if lab[fc][q] is True and lab[om].get(q) is False)
    assert om_only or fc_only  # the two strategies disagree somewhere on these 12 questions
    with pw.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.goto((out / "compare.html").as_uri())
            page.select_option("#run-a", value=om)
            page.select_option("#run-b", value=fc)
            assert (_qids(page, "#a-only"), _qids(page, "#b-only")) == (om_only, fc_only)
            summary = page.locator("#compare-summary").inner_text()
            assert "12 questions in both runs" in summary and f"{len(om_only)} only A right" in summary
            assert f"a={names[om]}&b={names[fc]}" in unquote(page.url)  # the address names the pair: a link
            page.screenshot(path=str(tmp_path / "compare.png"))
            links = page.locator("#a-only a, #b-only a")
            assert links.count() == 2 * (len(om_only) + len(fc_only))
            for i in range(links.count()):  # every link leads to a question page that was written
                assert (out / links.nth(i).get_attribute("href")).exists()
            # the address picks the pair (a link someone sent), here the other way round
            page.goto((out / "compare.html").as_uri() + f"#a={quote(names[fc])}&b={quote(names[om])}")
            assert (page.locator("#run-a").input_value(), page.locator("#run-b").input_value()) == (fc, om)
            assert (_qids(page, "#a-only"), _qids(page, "#b-only")) == (fc_only, om_only)
            # a linked name with a typo is said, not silently replaced by another pair
            page.goto((out / "compare.html").as_uri() + f"#a=no-such-run&b={quote(names[om])}")
            assert "No run named no-such-run" in page.locator("#compare-summary").inner_text()
            page.select_option("#run-b", value=other)
            assert "Different datasets" in page.locator("#compare-summary").inner_text()
            assert _qids(page, "#a-only") == [] and _qids(page, "#b-only") == []
        finally:
            browser.close()
