"""The real-cluster tests' rule for missing system packages: skip on a user's machine, naming the
one install command; fail under ``CI=true``, where ``.ci/run`` has installed them."""

from __future__ import annotations

import pytest

from .conftest import require
from .local_slurm import INSTALL


def test_a_missing_program_skips_naming_the_install_command(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception,
                       match="needs slurmctld, munged: apt-get install -y slurmctld slurmd"):
        require(["slurmctld", "munged"], INSTALL)


def test_under_ci_a_missing_program_fails(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must run the real-cluster tests"):
        require(["slurmctld"], INSTALL)
    require([], INSTALL)  # nothing missing: the test goes on
