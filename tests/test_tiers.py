"""The tiers' budget check and durations report (tests/tiers.py) on a small suite of its own.

Real: a pytest run in a subprocess with the plugin loaded, with and without pytest-xdist; the
"slow" tests sleep just past a budget set for the run.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

HERE = Path(__file__).parent
MAKEFILE = HERE.parent / "Makefile"

SUITE = '''
import time
import pytest

def test_quick():
    pass

def test_slow_unmarked():
    time.sleep(0.3)

@pytest.mark.e2e
def test_slow_e2e():
    time.sleep(0.3)

@pytest.mark.slow
def test_slow_old_name():
    time.sleep(0.3)
'''

# Plugins the venv installs that this small suite does not use (each costs a second to import).
QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:hydra_pytest",
         "-p", "no:anyio")


def run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, list[list[str]]]:
    pytester.makeconftest(f"import sys\nsys.path.insert(0, {str(Path(__file__).parent)!r})\n"
                          "pytest_plugins = ('tiers',)\n")
    pytester.makepyfile(test_suite=SUITE)
    report = pytester.path / "reports" / "d.tsv"
    result = pytester.runpytest_subprocess(*QUIET, "--budget-s", "0.2",
                                           "--durations-report", str(report), *args)
    return result, [ln.split("\t") for ln in report.read_text().splitlines()]


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["plain", "xdist"])
def test_a_slow_unmarked_test_fails_the_run_and_all_are_reported(pytester, workers) -> None:
    result, rows = run(pytester, *workers, "--dist", "loadscope") if workers else run(pytester)
    assert result.ret == 1  # every test passed; the budget failed the run
    result.stdout.fnmatch_lines(["*tests over budget*", "*call*test_suite.py::test_slow_unmarked"])
    assert "test_slow_e2e" not in result.stdout.str().split("tests over budget", 1)[1]
    header, tests = rows[0], {r[0].split("::")[-1]: dict(zip(rows[0], r)) for r in rows[1:]
                              if not r[0].startswith("#")}
    assert header[:5] == ["test", "setup", "call", "teardown", "total"]
    assert set(tests) == {"test_quick", "test_slow_unmarked", "test_slow_e2e",
                          "test_slow_old_name"}
    assert float(tests["test_slow_unmarked"]["call"]) >= 0.3
    assert tests["test_slow_e2e"]["marks"] == "e2e"
    assert tests["test_slow_old_name"]["marks"] == "e2e,slow"  # the old name counts as e2e
    assert rows[-1][:2] == ["# module", "test_suite.py"]
    if workers:  # loadscope: a module's tests share a worker, so one worker ran all four
        assert len({t["worker"] for t in tests.values()}) == 1 and tests["test_quick"]["worker"]


def test_the_fast_tier_leaves_out_e2e_and_its_old_name_and_budget_0_checks_nothing(
        pytester) -> None:
    result, rows = run(pytester, "-m", "not e2e", "--budget-s", "0")
    assert result.ret == 0  # test_slow_unmarked is over 0.2 s, but 0 turns the check off
    result.stdout.fnmatch_lines(["*2 passed, 2 deselected*"])
    assert sorted(r[0].split("::")[-1] for r in rows[1:] if not r[0].startswith("#")) == [
        "test_quick", "test_slow_unmarked"]


def test_a_second_run_beside_the_last_report_loads_the_plugin(pytester) -> None:
    """Real: two pytest runs laid out as `make test` runs them (the plugin named by
    `tests/conftest.py`, `testpaths = tests`, the report in a sibling folder that exists after
    the first run), with the option written the way the Makefile writes it."""
    forms = re.findall(r"--durations-report(\S)", MAKEFILE.read_text())
    assert forms and set(forms) == {"="}, forms  # PATH as a separate word breaks the second run
    pytester.makeini("[pytest]\ntestpaths = tests\n")
    tests = pytester.mkdir("tests")
    (tests / "conftest.py").write_text(f"import sys\nsys.path.insert(0, {str(HERE)!r})\n"
                                       "pytest_plugins = ('tiers',)\n")
    (tests / "test_suite.py").write_text("def test_quick():\n    pass\n")
    for run_no in (1, 2):
        result = pytester.runpytest_subprocess(*QUIET, "--durations-report=.test-reports/t.tsv")
        assert result.ret == 0, (run_no, result.stderr.str())
        assert (pytester.path / ".test-reports" / "t.tsv").read_text().startswith("test\t")
