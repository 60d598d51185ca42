"""The test tiers' budgets: a durations report on every run, and a failed run when a test is slow.

Why: every edit waits on this suite, and a slow test creeps in unseen unless something says so.
Each phase of a test (setup, call, teardown) gets ``--budget-s`` seconds (default: the ini option
``budget_s``); a test marked ``e2e`` or ``cluster`` is exempt (``make test-fast`` leaves those
out). Over budget, the run still reports every test, then lists the slow ones and exits 1.
``--durations-report PATH`` writes one tab-separated row per test (its phases' seconds, total,
markers, the xdist worker), slowest first, plus a ``# module`` total per test module.

Under pytest-xdist the controller receives every worker's reports, so the report and the check
run there once, for the whole run.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

EXEMPT = ("e2e", "cluster")
PHASES = ("setup", "call", "teardown")
# Marks whose tests are left out of `make test-fast` (and never budgeted); `slow` is an old
# name for `e2e`.
ALIASES = {"slow": "e2e"}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("vade tiers")
    group.addoption("--budget-s", type=float, default=None, metavar="SECONDS",
                    help="fail the run when a phase of a test not marked e2e/cluster takes "
                         "longer (0: no check; default: the ini option budget_s)")
    group.addoption("--durations-report", default=None, metavar="PATH",
                    help="write every test's durations (TSV, slowest first) to PATH")
    parser.addini("budget_s", "seconds a phase of a test not marked e2e/cluster may take",
                  default="10")


@pytest.hookimpl(tryfirst=True)  # before -m selects on the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """``slow`` counts as ``e2e``, so ``-m 'not e2e'`` leaves out both."""
    for item in items:
        for old, new in ALIASES.items():
            if item.get_closest_marker(old) and not item.get_closest_marker(new):
                item.add_marker(new)


def budget_of(config: pytest.Config) -> float:
    value = config.getoption("budget_s")
    return float(config.getini("budget_s")) if value is None else value


class Durations:
    """Collects each test's phase durations as reports arrive (on the xdist controller)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.seconds: dict[str, dict[str, float]] = defaultdict(dict)
        self.marks: dict[str, set[str]] = {}
        self.worker: dict[str, str] = {}

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        test = report.nodeid
        self.seconds[test][report.when] = report.duration
        self.marks[test] = {k for k in EXEMPT + tuple(ALIASES) if k in report.keywords}
        self.worker[test] = getattr(report, "node", None) and report.node.gateway.id or ""

    def over_budget(self) -> list[tuple[str, str, float]]:
        """(test, phase, seconds) of every phase over budget in a test that is not exempt."""
        budget = budget_of(self.config)
        if budget <= 0:
            return []
        return sorted(((test, phase, s) for test, phases in self.seconds.items()
                       if not self.marks[test] for phase, s in phases.items() if s > budget),
                      key=lambda row: -row[2])

    def write(self, path: Path) -> None:
        rows = sorted(self.seconds.items(), key=lambda kv: -sum(kv[1].values()))
        modules: dict[str, float] = defaultdict(float)
        lines = ["test\t" + "\t".join(PHASES) + "\ttotal\tmarks\tworker"]
        for test, phases in rows:
            total = sum(phases.values())
            modules[test.split("::", 1)[0]] += total
            lines.append("\t".join([test, *(f"{phases.get(p, 0.0):.2f}" for p in PHASES),
                                    f"{total:.2f}", ",".join(sorted(self.marks[test])),
                                    self.worker[test]]))
        lines += [f"# module\t{m}\t{s:.1f}" for m, s in sorted(modules.items(),
                                                                  key=lambda kv: -kv[1])]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter) -> None:
        slow = self.over_budget()
        if slow:
            terminalreporter.section("tests over budget", sep="=", red=True, bold=True)
            terminalreporter.line(
                f"{len(slow)} phase(s) took longer than {budget_of(self.config):g} s; mark the "
                "test e2e (or cluster) or make it faster (docs/testing.md):")
            for test, phase, s in slow:
                terminalreporter.line(f"{s:8.1f} s  {phase:<8} {test}")

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        path = self.config.getoption("durations_report")
        if path:
            self.write(Path(path))
        if self.over_budget() and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # an xdist worker forwards its reports instead
        config.pluginmanager.register(Durations(config), "vade-durations")
