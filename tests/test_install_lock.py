"""The install reproduces its lock: no drift in the venv, env files equal to their locks, hand pins held.

Everything here is real: the venv the tests run in (made by `make` from requirements/lock/venv.txt),
the lock files, the conda env files and lmms-eval itself. Nothing is stubbed; the drift message is
also checked on a made-up installed set so its wording is pinned without breaking the venv.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
import yaml
from packaging.requirements import Requirement

from vade.lockfile import LOCK_DIR, Pin, drift, installed_versions, pins_for_this_machine, read_lock

ROOT = Path(__file__).resolve().parents[1]
VENV_LOCK = LOCK_DIR / "venv.txt"
ENV_LOCKS = sorted((LOCK_DIR / "envs").glob("*.txt"))
_spec = importlib.util.spec_from_file_location("render_env_files",
                                               ROOT / "requirements" / "render_env_files.py")
render_env_files = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(render_env_files)
# Installed but deliberately not locked: the project itself (installed editable from the checkout)
# and pip, the seed package `python -m venv` puts there to bootstrap uv.
UNLOCKED = frozenset({"vade", "pip"})
# The platform the conda env locks are made for (requirements/render_env_files.py: linux-64).
LINUX_64 = {"sys_platform": "linux", "platform_machine": "x86_64", "platform_system": "Linux",
            "python_version": "3.11", "python_full_version": "3.11.7", "os_name": "posix",
            "implementation_name": "cpython", "platform_python_implementation": "CPython"}


def test_the_venv_holds_exactly_its_lock():
    """Every distribution in this interpreter is in the lock at the locked version, and back."""
    problems = drift(pins_for_this_machine(VENV_LOCK), installed_versions(), ignore=UNLOCKED)
    assert not problems, (
        "the venv drifted from requirements/lock/venv.txt:\n  " + "\n  ".join(problems)
        + "\nresync with `rm .venv/.stamp && make test`; if the change is meant, `make lock`")


def test_drift_names_the_package_and_both_versions():
    locked = {"filelock": Pin("filelock", "4.2.12", None, "venv.txt:7"),
              "numpy": Pin("numpy", "1.26.4", None, "venv.txt:9")}
    installed = {"filelock": "4.3.1", "numpy": "1.26.4", "rich": "14.0.0", "vade": "0.1.0"}
    assert drift(locked, installed, ignore=frozenset({"vade"})) == [
        "filelock: installed 4.3.1, locked 4.2.12 (venv.txt:7)",
        "rich: installed 14.0.0, not in the lock",
    ]
    assert drift(locked, {"filelock": "4.2.12"}) == [
        "numpy: locked 1.26.4 (venv.txt:9), not installed"]


def test_markers_choose_one_torch_per_machine():
    """The universal lock carries both CPU torch pairs; each machine gets exactly one."""
    x86 = pins_for_this_machine(VENV_LOCK, dict(LINUX_64))
    arm = pins_for_this_machine(VENV_LOCK, dict(LINUX_64, platform_machine="aarch64"))
    assert (x86["torch"].version, x86["torchvision"].version) == ("2.14.1", "0.29.1")
    assert (arm["torch"].version, arm["torchvision"].version) == ("2.9.1", "0.24.1")
    assert "nvidia-cublas" in x86 and "nvidia-cublas" not in arm


def test_a_malformed_lock_line_is_named(tmp_path):
    lock = tmp_path / "lock.txt"
    lock.write_text("numpy==1.26.4\nfilelock>=4\n")
    with pytest.raises(ValueError, match=r"lock.txt:2: not a `name==version"):
        read_lock(lock)


def test_pip_check_is_clean():
    result = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def _declared_requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    groups = (ROOT / "requirements" / "venv.in").read_text().split("[", 1)[1].split("]", 1)[0]
    declared = list(project["dependencies"])
    for group in groups.split(","):
        declared += project["optional-dependencies"][group.strip()]
    return [Requirement(text) for text in declared]


def test_the_venv_lock_satisfies_what_pyproject_declares():
    """A dependency added or narrowed in pyproject.toml without `make lock` fails here."""
    locked = pins_for_this_machine(VENV_LOCK, dict(LINUX_64))
    unmet = [f"{req} (locked {locked[req.name.lower()].version if req.name.lower() in locked else 'nothing'})"
             for req in _declared_requirements()
             if req.name.lower() not in locked
             or not req.specifier.contains(locked[req.name.lower()].version, prereleases=True)]
    assert not unmet, "pyproject.toml asks for what requirements/lock/venv.txt lacks: " + \
        ", ".join(unmet) + "; run `make lock`"


def _hand_pins() -> list[Requirement]:
    lines = (ROOT / "requirements" / "constraints.txt").read_text().splitlines()
    return [Requirement(line) for line in lines if line.strip() and not line.startswith("#")]


@pytest.mark.parametrize("lock", [VENV_LOCK, *ENV_LOCKS], ids=lambda p: p.stem)
def test_every_lock_keeps_the_hand_pins(lock):
    """filelock<4.3, numpy 1.26.4 and the others hold in every lock that contains the package."""
    pins = pins_for_this_machine(lock, dict(LINUX_64))
    broken = [f"{req} but locked {pins[req.name].version}" for req in _hand_pins()
              if req.name in pins and not req.specifier.contains(pins[req.name].version)]
    assert not broken, f"{lock.name}: " + "; ".join(broken)


def _pip_section(env_file: Path) -> list[str]:
    dependencies = yaml.safe_load(env_file.read_text())["dependencies"]
    sections = [item["pip"] for item in dependencies if isinstance(item, dict) and "pip" in item]
    assert len(sections) == 1, f"{env_file}: expected one pip section"
    return sections[0]


CONDA_LOCKS = [lock for lock in ENV_LOCKS if lock.stem not in render_env_files.NOT_CONDA]


@pytest.mark.parametrize("lock", CONDA_LOCKS, ids=lambda p: p.stem)
def test_every_env_file_installs_exactly_its_lock(lock):
    env_file = ROOT / "envs" / f"{lock.stem}.yaml"
    wanted = [f"{pin.name}=={pin.version}" for pin in read_lock(lock)]
    got = [line.split(";")[0].strip().lower() for line in _pip_section(env_file)]
    assert [w.lower() for w in wanted] == got, (
        f"{env_file.name} differs from {lock.name}: run `make lock` (never edit env files by hand)")


def test_every_conda_env_has_a_lock_and_back():
    envs = {path.stem for path in (ROOT / "envs").glob("*.yaml")}
    inputs = {path.stem for path in (ROOT / "requirements" / "envs").glob("*.in")}
    assert envs == inputs - render_env_files.NOT_CONDA == {lock.stem for lock in CONDA_LOCKS}
    assert render_env_files.NOT_CONDA <= inputs   # the engines lock is made like the others


def test_the_gpu_envs_lock_the_paper_stack():
    for name in ("train-verl", "eval-vllm"):
        pins = pins_for_this_machine(LOCK_DIR / "envs" / f"{name}.txt", dict(LINUX_64))
        assert (pins["torch"].version, pins["vllm"].version) == ("2.9.0", "0.12.0"), name
    assert pins_for_this_machine(LOCK_DIR / "envs" / "train-verl.txt")["verl"].version == "0.7.1"
    assert pins_for_this_machine(LOCK_DIR / "envs" / "eval-vllm.txt")["lmms-eval"].version == "0.7.3"


def test_lmms_eval_reentrant_filelocks_work_with_the_locked_filelock(tmp_path):
    """What filelock 4.3 broke: lmms-eval's cross-class singleton patch (imports filelock._api)."""
    import filelock
    from datasets.utils import _filelock as datasets_filelock
    from lmms_eval.evaluator import _enable_reentrant_filelocks

    _enable_reentrant_filelocks()
    path = str(tmp_path / "x.lock")
    first = filelock.FileLock(path)
    assert datasets_filelock.FileLock(path) is first
    with first, datasets_filelock.FileLock(path):  # nested acquire of one lock: no deadlock
        assert first.is_locked
