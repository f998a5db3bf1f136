"""`ombench view` on a real (offline) run: every page is written, every link resolves, and in a real headless
Chromium the index filters and search work and an OM question page shows the observations stored for it
(the compare page: test_compare_page.py)."""

from __future__ import annotations

import re
import shutil
from html.parser import HTMLParser
from urllib.parse import unquote, urlparse

import pytest

from bench.cli import main
from bench.store import Results

pytestmark = pytest.mark.slow  # a real run, then a real browser


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.external: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("href", "src"):
            v = a.get(key)
            if v:
                (self.external if urlparse(v).scheme in ("http", "https") or v.startswith("//") else self.links).append(v)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    from bench.runner.app import run_job
    from tests.helpers.runner import compose_cfg

    tmp = tmp_path_factory.mktemp("view")
    run_job(compose_cfg(tmp, "dataset.limit=3", "run_strategies=[om,rag]", "judge.second_model=offline/judge"))
    db = tmp / "bench.duckdb"
    assert main(["view", "--db", str(db), "--out", str(tmp / "view")]) == 0
    return db, tmp / "view"


def test_every_page_is_written_and_every_link_resolves(site):
    db, out = site
    pages = sorted(out.rglob("*.html"))
    with Results(db) as res:
        n_samples = len(res.samples())
    assert len(pages) == 2 + 2 + n_samples  # index, compare, one per run, one per question
    for page in pages:
        p = _Links()
        p.feed(page.read_text())
        assert not p.external, (page, p.external)  # self-contained: no CDN, no network
        for link in p.links:
            target = unquote(link.split("#")[0])
            if target:
                assert (page.parent / target).resolve().exists(), (page, link)


def test_question_pages_hold_what_the_store_holds(site):
    db, out = site
    with Results(db) as res:
        om = next(k for k in res.run_keys() if k.startswith("om-"))
        rag = next(k for k in res.run_keys() if k.startswith("rag-"))
        s = res.samples(om).iloc[0]
        memory = res.memory(om, s.question_id)
        texts = res.call_texts(om, s.question_id)
        retr = res.retrieval()
    assert memory and memory[0].kind == "observations" and memory[0].text.strip()
    assert texts and all(m is not None and r is not None for m, r in texts.values())  # Actor and judge, kept
    assert set(retr.run_key) == {rag} and {"turn", "turn_session"} <= set(retr.level)
    page = next(out.glob(f"q/om-*/{re.sub(r'[^A-Za-z0-9_-]+', '_', s.question_id)}-*.html"))
    html = page.read_text()
    first_line = next(line for line in memory[0].text.splitlines() if line.strip())
    from markupsafe import escape  # as Jinja2 escapes

    assert str(escape(first_line)) in html and s.gold_answer in html and "second judge" in html


def _browser():
    pw = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    exe = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
    if exe is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium; .ci/run installs it where it can)")
    return pw, exe


def test_a_real_browser_shows_one_questions_observations(site, tmp_path):
    pw, exe = _browser()
    db, out = site
    with Results(db) as res:
        om = next(k for k in res.run_keys() if k.startswith("om-"))
        qid = res.samples(om).iloc[0].question_id
        obs = res.memory(om, qid)[0].text
    with pw.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.goto((out / "index.html").as_uri())
            rows = page.locator("#questions tr[data-row]")
            total = rows.count()
            assert total > 0 and page.locator("#shown").inner_text() == str(total)
            page.select_option("select[data-filter='run']", label=page.locator(
                "select[data-filter='run'] option").nth(1).inner_text())  # the script filters by run
            shown = int(page.locator("#shown").inner_text())
            assert 0 < shown < total and sum(rows.nth(i).is_visible() for i in range(total)) == shown
            # follow the link of the OM question to its page, as a user would
            page.select_option("select[data-filter='run']", value="")
            link = page.locator(f"#questions a:text-is('{qid}')").first
            href = link.get_attribute("href")
            page.goto((out / href).as_uri())
            block = page.locator(".memory-lines.observations").first
            assert block.is_visible()
            shown_text = block.inner_text()
            assert next(line for line in obs.splitlines() if line.strip()).strip() in shown_text
            page.locator("#memory").scroll_into_view_if_needed()
            page.screenshot(path=str(tmp_path / "om_question.png"))
            assert (tmp_path / "om_question.png").stat().st_size > 10_000
        finally:
            browser.close()


def test_search_finds_questions_by_their_text(site):
    pw, exe = _browser()
    db, out = site
    with Results(db) as res:
        samples = res.samples()
    words = samples.question.iloc[0].split()
    probe = " ".join(words[-3:]).lower()  # the question's end: past what the table cell shows of a long one
    want = sum(probe in q.lower() for q in samples.question)
    with pw.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.goto((out / "index.html").as_uri())
            page.fill("#search", probe)
            assert int(page.locator("#shown").inner_text()) == want > 0
            page.fill("#search", "no question holds this zzqx")
            assert page.locator("#shown").inner_text() == "0"
        finally:
            browser.close()

