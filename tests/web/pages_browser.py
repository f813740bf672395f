"""The pages in real Chromium (Debian's, driven by PyPI's playwright from the
checkout's .venv), against the hpcai500d that
tests/integration/pages_browser_test.cc starts over seeded runs and one live
smoke run. That test runs this file with the venv's python and passes, in the
environment:
  HPCAI500_URL            the coordinator's HTTP address
  HPCAI500_LIVE_RUN       a run training now
  HPCAI500_STRAGGLER_RUN  a finished 4-rank run whose rank 3 is slow
  HPCAI500_SCALING_SYSTEM a system with bf16 runs at 1, 2, 4 and 8 devices
                          and a strong-scaling sweep of two configurations
                          (fp32 at 1, 2, 4; bf16 with PowerSGD at 2, 4)
  HPCAI500_SCALING_SWEEP  that sweep's id
  HPCAI500_HISTORY_NAME   a spec with eight nightly runs, one regressed
  HPCAI500_SCREENSHOTS    where the screenshots go
  HPCAI500_CHROMIUM       the browser

The tests run in the order written, in one browser: the first watches the
live run while it is young. Exits 0 when every test passed.
"""
import contextlib
import json
import os
import re
import sys
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import sync_playwright

ENV = os.environ
BASE = ENV.get("HPCAI500_URL", "")
SHOTS = ENV.get("HPCAI500_SCREENSHOTS", ".")
DESKTOP = {"width": 1280, "height": 900}
LAPTOP = {"width": 1400, "height": 900}
PHONE = {"width": 390, "height": 844}
ENDED = ("RUN_STATE_SUCCEEDED", "RUN_STATE_FAILED", "RUN_STATE_CANCELLED")

# The coordinator is on loopback: no proxy from the environment applies.
_http = urllib.request.build_opener(urllib.request.ProxyHandler({}))

_playwright = None
_browser = None


def setUpModule():
    global _playwright, _browser
    assert BASE, "HPCAI500_URL is not set: run through ctest -R pages_browser"
    _playwright = sync_playwright().start()
    _browser = _playwright.chromium.launch(
        executable_path=ENV.get("HPCAI500_CHROMIUM") or "/usr/bin/chromium",
        args=["--disable-gpu", "--no-first-run",
              "--disable-background-networking"])


def tearDownModule():
    if _browser:
        _browser.close()
    if _playwright:
        _playwright.stop()


def quoted(text):
    """text as JavaScript's encodeURIComponent writes it."""
    return urllib.parse.quote(text, safe="!~*'()")


def fetch(path):
    """GET BASE + path: (status, headers with lower-case names, body)."""
    try:
        with _http.open(BASE + path, timeout=30) as response:
            status, headers, body = (response.status, response.headers,
                                     response.read())
    except urllib.error.HTTPError as error:
        status, headers, body = error.code, error.headers, error.read()
    return (status, {k.lower(): v for k, v in headers.items()},
            body.decode("utf-8"))


def api(path):
    """The JSON answer of the API at path; fails unless it answered 200."""
    status, _, text = fetch(path)
    assert status == 200, f"{path}: {status} {text}"
    return json.loads(text)


@contextlib.contextmanager
def opened(path, viewport=DESKTOP):
    """A page at path in a context of its own, closed on leaving. Fails when
    the page threw an uncaught error meanwhile."""
    context = _browser.new_context(viewport=viewport)
    errors = []
    try:
        page = context.new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(BASE + path)
        yield page
        assert not errors, f"page error on {path}: {errors}"
    finally:
        context.close()


def shot(page, name):
    page.screenshot(path=f"{SHOTS}/{name}.png", full_page=True)


def wait_for_systems(page, expected):
    """Waits until the leaderboard's rows show the systems `expected`, top to
    bottom."""
    try:
        page.wait_for_function(
            """(expected) =>
                [...document.querySelectorAll('#leaderboard tbody tr')]
                    .map((tr) =>
                        tr.querySelector('td.system').firstChild.textContent)
                    .join('|') === expected""",
            arg="|".join(expected), timeout=15000)
    except PlaywrightTimeoutError:
        shown = page.eval_on_selector_all(
            "#leaderboard tbody tr",
            "(rows) => rows.map((tr) =>"
            " tr.querySelector('td.system')?.firstChild?.textContent)")
        raise AssertionError(
            f"the leaderboard shows {shown}, not {expected}") from None


def wait_for_run_end(run_id, timeout_s):
    """Polls run `run_id` until it ended; returns its final state."""
    deadline = time.monotonic() + timeout_s
    while True:
        run = api(f"/api/v1/runs/{run_id}")
        if run["state"] in ENDED:
            return run["state"]
        assert time.monotonic() < deadline, f"run {run_id} still {run['state']}"
        time.sleep(0.5)


def circles(page, chart):
    return page.eval_on_selector_all(f"#{chart} circle", "(c) => c.length")


def count(page, selector):
    return page.eval_on_selector_all(selector, "(nodes) => nodes.length")


def texts(page, selector):
    return page.eval_on_selector_all(
        selector, "(nodes) => nodes.map((n) => n.textContent)")


def systems(board):
    return [row["system"] for row in board["rows"]]


class PagesInChromium(unittest.TestCase):
    maxDiff = None

    # First, while the live run is young: its page gains an epoch on its own.
    def test_a_live_run_page_gains_an_epoch_without_a_reload(self):
        live = ENV["HPCAI500_LIVE_RUN"]
        with opened(f"/#/runs/{live}") as page:
            page.wait_for_selector("#chart-throughput")
            state = page.eval_on_selector("#run .badge", "(b) => b.textContent")
            before = circles(page, "chart-throughput")
            self.assertNotIn(
                state, ("succeeded", "failed", "cancelled"),
                f"the live run was already {state} when its page opened")
            page.evaluate("() => { window.stillTheSameDocument = true; }")
            page.wait_for_function(
                "(n) => document.querySelectorAll("
                "'#chart-throughput circle').length > n",
                arg=before, timeout=150000, polling=500)
            self.assertIs(page.evaluate("() => window.stillTheSameDocument"),
                          True, "the page was reloaded")
            shot(page, "run-live")
        # The tests below compare the leaderboard's rows with the API's: the
        # live run (ranked, on that board) must not join it between the two
        # reads.
        self.assertEqual(wait_for_run_end(live, 150), "RUN_STATE_SUCCEEDED")

    def test_the_leaderboard_lists_ranked_rows_by_valid_flops_best_first(self):
        board = api("/api/v1/leaderboard?workload=image_classification"
                    "&limit=25&offset=0")
        ranked = [row for row in board["rows"] if row.get("ranked")]
        self.assertGreaterEqual(len(ranked), 4, json.dumps(board))
        for better, worse in zip(ranked, ranked[1:]):
            self.assertGreaterEqual(better["valid_flops"], worse["valid_flops"])
        with opened("/") as page:
            wait_for_systems(page, systems(board))
            self.assertEqual(
                texts(page,
                      "#leaderboard tbody tr:not(.unranked) td:first-child"),
                [str(i + 1) for i in range(len(ranked))])
            self.assertEqual(
                page.get_attribute('th[data-key="rank"]', "aria-sort"),
                "ascending")
            # Each row carries devices, spread, versions and links its
            # submission.
            alpha = page.locator("#leaderboard tbody tr",
                                 has_text="alpha-bf16").filter(
                                     has_text="3 runs")
            self.assertRegex(alpha.text_content(), r"NVIDIA H200")
            self.assertRegex(alpha.text_content(), r"nccl 2\.21\.5")
            shot(page, "leaderboard")
            alpha.locator("a").first.click()
            page.wait_for_selector("#submission-runs tbody tr")
            self.assertEqual(count(page, "#submission-runs tbody tr"), 3)

    def test_a_click_on_a_header_re_sorts_by_that_column_both_ways(self):
        with opened("/") as page:
            page.wait_for_selector("#leaderboard tbody tr")
            by_flops = api("/api/v1/leaderboard?workload=image_classification"
                           "&sort=flops&order=desc&limit=25&offset=0")
            page.click('th[data-key="flops"] button')
            wait_for_systems(page, systems(by_flops))
            self.assertEqual(
                page.get_attribute('th[data-key="flops"]', "aria-sort"),
                "descending")
            self.assertEqual(
                page.get_attribute('th[data-key="rank"]', "aria-sort"), "none")
            # proto3 JSON leaves zeros out.
            flops = [row.get("flops", 0) for row in by_flops["rows"]]
            self.assertEqual(flops, sorted(flops, reverse=True))
            self.assertRegex(page.url, r"sort=flops")
            shot(page, "leaderboard-by-flops")

            page.click('th[data-key="flops"] button')
            ascending = api("/api/v1/leaderboard?workload=image_classification"
                            "&sort=flops&order=asc&limit=25&offset=0")
            wait_for_systems(page, systems(ascending))
            self.assertEqual(
                page.get_attribute('th[data-key="flops"]', "aria-sort"),
                "ascending")

    def test_the_level_filter_keeps_only_that_level_ranked_within_it(self):
        with opened("/") as page:
            page.wait_for_selector("#leaderboard tbody tr")
            hardware = api("/api/v1/leaderboard?workload=image_classification"
                           "&level=hardware&limit=25&offset=0")
            page.select_option('select[name="level"]', "hardware")
            wait_for_systems(page, systems(hardware))
            levels = page.eval_on_selector_all(
                "#leaderboard tbody tr",
                "(rows) => rows.map((tr) => tr.dataset.level)")
            self.assertGreater(len(levels), 0)
            self.assertEqual(set(levels), {"hardware"})
            self.assertEqual(
                page.eval_on_selector("#leaderboard tbody tr td:first-child",
                                      "(td) => td.textContent"), "1")
            self.assertRegex(page.url, r"level=hardware")
            shot(page, "leaderboard-hardware")

    def test_a_run_page_draws_its_charts_and_names_the_straggler(self):
        run = ENV["HPCAI500_STRAGGLER_RUN"]
        with opened(f"/#/runs/{run}") as page:
            page.wait_for_selector("#chart-rank-throughput svg")
            self.assertEqual(circles(page, "chart-throughput"), 2,
                             "one per epoch")
            self.assertEqual(
                count(page, "#chart-rank-throughput g[data-series]"), 4,
                "one series per rank")
            self.assertRegex(
                page.text_content("#chart-rank-throughput .straggler"),
                r"rank 3 is \d+% slower than the median rank")
            self.assertEqual(count(page, "#chart-accuracy line.target"), 1)
            self.assertEqual(
                count(page, "#chart-time-split g[data-series]"), 3)
            self.assertEqual(circles(page, "chart-energy"), 2)
            self.assertRegex(page.text_content("#run"), r"nccl 2\.21\.5")

            links = page.eval_on_selector_all(
                "#run table.logs a",
                "(as) => as.map((a) => a.getAttribute('href'))")
            self.assertEqual(len(links), 8, "events and stderr of 4 ranks")
            status, headers, events = fetch(links[0])
            self.assertEqual(status, 200)
            self.assertRegex(headers.get("content-disposition", ""),
                             r"^attachment")
            self.assertRegex(events, r"hpcai500_epoch_stats")
            _, _, stderr = fetch(links[7])
            self.assertEqual(stderr, "rank 3: trained\n")
            shot(page, "run-straggler")

    def test_the_scaling_page_draws_one_series_per_configuration(self):
        system = quoted(ENV["HPCAI500_SCALING_SYSTEM"])
        with opened(f"/#/scaling?system={system}"
                    "&workload=image_classification") as page:
            page.wait_for_selector("#chart-scaling-efficiency svg")
            # Never averaged across configurations: fp32 and bf16,
            # compression on and off, are series of the same charts.
            names = page.eval_on_selector_all(
                "#chart-scaling-vflops g[data-series]",
                "(groups) => groups.map((g) => g.dataset.series)")
            self.assertEqual(names, [
                "bf16, no compression, not a sweep",
                "bf16, powersgd compression, strong scaling",
                "fp32, no compression, strong scaling",
            ])
            self.assertEqual(circles(page, "chart-scaling-vflops"), 4 + 2 + 3)
            self.assertEqual(circles(page, "chart-scaling-efficiency"), 9)
            # Each size's time split, from the ranks' epoch stats (70%
            # compute, 20% input wait, 10% communication in the seeds).
            self.assertEqual(circles(page, "chart-scaling-comm"), 9)
            tables = page.eval_on_selector_all(
                "#scaling table.scaling",
                "(tables) => tables.map((t) => t.dataset.configuration)")
            self.assertEqual(tables, names)
            fp32 = '#scaling table[data-configuration^="fp32"]'
            self.assertEqual(texts(page, f"{fp32} tbody td:first-child"),
                             ["1", "2", "4"])
            row = texts(page, f"{fp32} tbody tr:nth-child(2) td")
            self.assertEqual(row[3], "95.0%", row)  # 1.9e12 / 2 / 1e12
            self.assertRegex(row[4], r"\(70\.0%\)")
            self.assertRegex(row[6], r"\(10\.0%\)")
            bf16 = '#scaling table[data-configuration^="bf16, no"]'
            self.assertEqual(texts(page, f"{bf16} tbody td:first-child"),
                             ["1", "2", "4", "8"])
            shot(page, "scaling")

            # One sweep chosen: its two configurations only.
            sweep = ENV["HPCAI500_SCALING_SWEEP"]
            page.click(f'.sweeps a:text-is("{sweep}")')
            page.wait_for_function(
                "() => document.querySelectorAll("
                "'#chart-scaling-vflops g[data-series]').length === 2")
            self.assertEqual(circles(page, "chart-scaling-vflops"), 5)
            self.assertRegex(page.url, r"sweep=")
            shot(page, "scaling-sweep")

    def test_the_top_bar_opens_the_scaling_and_history_indexes(self):
        with opened("/") as page:
            page.wait_for_selector("#leaderboard tbody tr")
            self.assertEqual(texts(page, "header nav a"), [
                "Leaderboard", "Runs", "Scaling", "History", "Nodes"])
            page.click('header nav a:text-is("Scaling")')
            page.wait_for_selector("#scaling-index tbody tr")
            self.assertEqual(
                page.get_attribute('nav a[data-nav="scaling"]',
                                   "aria-current"), "page")
            listed = texts(page, "#scaling-index tbody td:first-child")
            self.assertIn("alpha", listed)
            self.assertEqual(listed, sorted(listed))
            page.fill('#scaling input[name="q"]', "ALPH")
            self.assertEqual(
                texts(page, "#scaling-index tbody td:first-child"), ["alpha"])
            # The workloads to choose are those with scored runs.
            self.assertEqual(
                texts(page, '#scaling select[name="workload"] option'),
                ["every workload", "image_classification"])
            page.select_option('#scaling select[name="workload"]',
                               "image_classification")
            self.assertEqual(
                texts(page, "#scaling-index tbody td:first-child"), ["alpha"])
            shot(page, "scaling-index")
            page.click('#scaling-index a:text-is("alpha")')
            page.wait_for_selector("#chart-scaling-vflops svg")
            self.assertRegex(page.url, r"system=alpha&workload=")

            page.click('header nav a:text-is("History")')
            page.wait_for_selector("#history-index tbody tr")
            history = ENV["HPCAI500_HISTORY_NAME"]
            page.fill('#history input[name="q"]', history[:5])
            rows = page.eval_on_selector_all(
                "#history-index tbody tr",
                "(rows) => rows.map((tr) => [...tr.cells].map("
                "(td) => td.textContent))")
            self.assertEqual([r[0] for r in rows], [history], rows)
            self.assertEqual(rows[0][3], "8 / 8")
            shot(page, "history-index")
            page.click(f'#history-index a:text-is("{history}")')
            page.wait_for_selector("#chart-history-vflops svg")

    def test_leaderboard_rows_link_their_scaling_and_history(self):
        with opened("/") as page:
            alpha = page.locator("#leaderboard tbody tr",
                                 has_text="alpha-bf16").filter(
                                     has_text="3 runs")
            alpha.wait_for()
            self.assertEqual(
                alpha.locator('a:text-is("scaling")').get_attribute("href"),
                "#/scaling?system=alpha&workload=image_classification")
            self.assertEqual(
                alpha.locator('a:text-is("history")').get_attribute("href"),
                "#/history/alpha-bf16")
            alpha.locator('a:text-is("scaling")').click()
            page.wait_for_selector("#chart-scaling-vflops svg")
            page.go_back()
            alpha.locator('a:text-is("history")').click()
            page.wait_for_selector("#chart-history-vflops svg")

    def test_the_history_page_draws_the_served_band_and_marks_the_regression(
            self):
        # The coordinator judges each run against its band (the C++ of
        # regress): of the eight nightly runs, the seventh fell below it.
        name = quoted(ENV["HPCAI500_HISTORY_NAME"])
        history = api(f"/api/v1/history?name={name}")
        self.assertEqual(len(history["runs"]), 8, json.dumps(history))
        flops = [run["metrics"]["valid_flops"] for run in history["runs"]]
        regressions = [m["regression"] for m in flops]
        self.assertTrue(all(isinstance(r, bool) for r in regressions),
                        regressions)
        self.assertEqual(regressions, [False] * 6 + [True, False])
        self.assertIsNone(flops[4]["low"],
                          "no band before five runs of history")
        low = flops[6]["low"]
        self.assertIsNotNone(low, json.dumps(flops[6]))
        self.assertTrue(flops[6]["value"] < low < 0.98e12,
                        json.dumps(flops[6]))
        regressed = str(history["runs"][6]["id"])

        with opened(f"/#/history/{name}") as page:
            page.wait_for_selector("#chart-history-vflops svg")
            self.assertEqual(circles(page, "chart-history-vflops"), 8)
            flagged = page.eval_on_selector_all(
                "#chart-history-vflops circle.flagged",
                "(dots) => dots.map((dot) =>"
                " dot.querySelector('title').textContent)")
            self.assertEqual(len(flagged), 1, "; ".join(flagged))
            self.assertRegex(flagged[0], f"^run {re.escape(regressed)}, ")
            self.assertEqual(count(page, "#chart-history-vflops polygon.band"),
                             1)
            rows = page.eval_on_selector_all(
                "#history table.regressions tbody tr",
                "(rows) => rows.map((tr) => tr.cells[0].textContent)")
            self.assertIn(regressed, rows)
            shot(page, "history")

    def test_at_phone_width_a_select_sorts_the_cards(self):
        with opened("/", PHONE) as page:
            page.wait_for_selector("#leaderboard tbody tr")
            self.assertIs(page.is_visible("#sort-by"), True)
            self.assertIs(page.is_visible("#leaderboard thead"), False)
            by_time = api("/api/v1/leaderboard?workload=image_classification"
                          "&sort=train_seconds&order=asc&limit=25&offset=0")
            page.select_option("#sort-by", "train_seconds:asc")
            wait_for_systems(page, systems(by_time))

    def test_the_leaderboard_fits_a_laptop_and_a_phone_notes_in_their_cells(
            self):
        # The table was wider than a 1400-pixel window (its last column cut,
        # the convergence note running under the next columns). On a laptop
        # it fits its box; on a phone its cards do, or it scrolls in its own
        # box and the page does not. Each note under a value stays in the
        # value's cell, and no cell's text spills out (but the software
        # column's, cut short with an ellipsis on purpose).
        for name, viewport in (("laptop-leaderboard", LAPTOP),
                               ("phone-leaderboard-cards", PHONE)):
            with self.subTest(viewport=viewport), \
                    opened("/", viewport) as page:
                page.wait_for_selector("#leaderboard tbody tr")
                fit = page.evaluate("""() => {
                    const table = document.querySelector('#leaderboard');
                    const box = table.closest('.scroll');
                    const cells = [...table.querySelectorAll('tbody td')];
                    const notes = [...table.querySelectorAll(
                        'tbody td .convergence')];
                    const outside = notes.filter((note) => {
                        const n = note.getBoundingClientRect();
                        const c = note.closest('td').getBoundingClientRect();
                        return n.left < c.left - 1 || n.right > c.right + 1;
                    }).map((note) => note.textContent);
                    const spilling = cells.filter((td) =>
                        !td.classList.contains('versions') &&
                        td.scrollWidth > td.clientWidth + 1)
                        .map((td) => `${td.dataset.label}: ${td.textContent}`);
                    return {
                        page: document.documentElement.scrollWidth,
                        window: window.innerWidth,
                        table: table.getBoundingClientRect().width,
                        box: box.clientWidth,
                        scrolls: getComputedStyle(box).overflowX,
                        notes: notes.length, outside, spilling,
                    };
                }""")
                self.assertLessEqual(fit["page"], fit["window"], fit)
                if viewport is LAPTOP:
                    self.assertLessEqual(fit["table"], fit["box"] + 1, fit)
                else:
                    self.assertTrue(fit["table"] <= fit["box"] + 1 or
                                    fit["scrolls"] == "auto", fit)
                self.assertGreater(fit["notes"], 0,
                                   "no convergence note to check")
                self.assertEqual(fit["outside"], [], fit)
                self.assertEqual(fit["spilling"], [], fit)
                shot(page, name)

    def test_at_phone_width_no_page_scrolls_sideways(self):
        history = quoted(ENV["HPCAI500_HISTORY_NAME"])
        pages = {
            "phone-leaderboard": ("/", "#leaderboard tbody tr"),
            "phone-runs": ("/#/runs", "#runs tbody tr"),
            "phone-run": (f"/#/runs/{ENV['HPCAI500_STRAGGLER_RUN']}",
                          "#chart-rank-throughput svg"),
            "phone-history": (f"/#/history/{history}",
                              "#chart-history-vflops svg"),
            "phone-scaling-index": ("/#/scaling", "#scaling-index tbody tr"),
            "phone-history-index": ("/#/history", "#history-index tbody tr"),
        }
        for name, (path, ready) in pages.items():
            with self.subTest(path=path), opened(path, PHONE) as page:
                page.wait_for_selector(ready)
                widths = page.evaluate("""() => ({
                    page: document.documentElement.scrollWidth,
                    body: document.body.scrollWidth,
                    window: window.innerWidth,
                })""")
                self.assertTrue(
                    widths["page"] <= widths["window"] and
                    widths["body"] <= widths["window"],
                    f"{path} is {widths['page']}px wide in a "
                    f"{widths['window']}px window")
                if name == "phone-runs":
                    # Each card line is labelled with its column, from the
                    # table's header.
                    labels = page.eval_on_selector(
                        "#runs tbody tr",
                        "(tr) => [...tr.cells].map((td) => td.dataset.label)")
                    self.assertEqual(labels, texts(page, "#runs thead th"))
                shot(page, name)


def main():
    # In the order written: the first test needs the live run still young.
    names = [name for name in vars(PagesInChromium) if name.startswith("test")]
    suite = unittest.TestSuite(PagesInChromium(name) for name in names)
    result = unittest.TextTestRunner(stream=sys.stdout, verbosity=2).run(suite)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
