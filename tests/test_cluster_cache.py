"""Prefetch and preflight against a cache they cannot use: one line each, naming the asset or
the folder and what to do, before anything is staged or loaded.

Real: the prefetch and preflight code, ``shutil``'s copy, the kernel's read-only and full file
systems (a 1 MiB tmpfs, read-only or not, mounted in a private mount namespace with
``unshare``; skipped where the machine does not allow it). Stand-ins: the hub (a download that
fails, file sizes given by hand) and, in the in-process tests, the disk's free space.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vade.cluster import prefetch as prefetch_mod
from vade.cluster.prefetch import PrefetchError


def test_a_hub_failure_names_the_asset_and_local_assets(paper):
    def unreachable(**kw):
        raise ConnectionError("Failed to resolve 'huggingface.co'")

    with pytest.raises(PrefetchError) as err:
        prefetch_mod.prefetch(paper, download=unreachable, log=lambda s: None)
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith("model Qwen/Qwen2.5-VL-3B-Instruct@main could not be downloaded "
                          "(ConnectionError: Failed to resolve 'huggingface.co')")
    assert "cluster.local_assets (one folder per asset id)" in msg


def test_no_room_is_refused_before_anything_is_staged(paper):
    calls = []
    # the paper's 11 assets at a stand-in 100 GB each: 3 models once, 8 datasets twice (the
    # files and their prepared copy): 300 + 1600 = 1900 GB
    with pytest.raises(PrefetchError, match=r"has 100.0 GB free, prefetch stages 1900.0 GB "
                                            r"\(\+ cluster.min_free_gb 50\)"):
        prefetch_mod.prefetch(paper, download=lambda **kw: calls.append(kw),
                              sizes=lambda a: 100 * 10**9, free=lambda p: 100 * 10**9,
                              log=lambda s: None)
    assert calls == []


UNDER_TMPFS = r"""
import json, sys
from pathlib import Path
from vade.cluster import prefetch as p
cfg = json.loads(sys.argv[1])
out = {}
try:
    p.prefetch(cfg, log=lambda s: None, **({"free": lambda _: 10**12} if sys.argv[2] == "skip"
                                           else {}))
except p.PrefetchError as exc:
    out["error"] = str(exc)
print(json.dumps(out))
"""


def _unshare(tmp_path: Path, mount_opts: str, cfg: dict, mode: str) -> dict:
    if not shutil.which("unshare"):
        pytest.skip("no unshare here")
    mnt = tmp_path / "mnt"
    mnt.mkdir(exist_ok=True)
    script = tmp_path / "run.py"
    script.write_text(UNDER_TMPFS)
    cmd = (f"mount -t tmpfs -o size=1m,{mount_opts} tmpfs {mnt} && "
           f"{sys.executable} {script} '{json.dumps(cfg)}' {mode}")
    proc = subprocess.run(["unshare", "-rm", "sh", "-c", cmd], capture_output=True, text=True,
                          timeout=120)
    if "mount" in proc.stderr and proc.returncode:
        pytest.skip(f"cannot mount a tmpfs in a user namespace here: {proc.stderr[-200:]}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _local_config(tmp_path: Path, paper: dict, megabytes: int) -> dict:
    """The tiny part of the paper config with one local asset of ``megabytes`` MB."""
    src = tmp_path / "local" / "Qwen" / "Qwen2.5-VL-3B-Instruct"
    src.mkdir(parents=True)
    (src / "model.safetensors").write_bytes(b"\0" * (megabytes * 10**6))
    cfg = {**paper, "experiments": {"seeds": [0], "grid": [{
        "models": ["qwen2.5-vl-3b"], "algorithms": ["grpo"], "methods": ["vanilla"]}]},
        "evaluate": {"kind": "synthetic"}, "data": {"kind": "synthetic"}}
    cfg["cluster"] = {"cache_dir": str(tmp_path / "mnt" / "cache"),
                      "local_assets": str(tmp_path / "local"), "min_free_gb": 0}
    return cfg


def test_read_only_cache_is_one_line(tmp_path, paper):
    cfg = _local_config(tmp_path, paper, 1)
    out = _unshare(tmp_path, "ro", cfg, "check")
    assert out["error"] == (f"cluster.cache_dir {tmp_path}/mnt/cache/hub is not writable "
                            "(Read-only file system): point cluster.cache_dir at a folder this "
                            "user can write")


@pytest.mark.e2e  # several seconds: real processes / a training run
def test_full_cache_is_refused_first_and_a_copy_that_fills_it_is_one_line(tmp_path, paper):
    cfg = _local_config(tmp_path, paper, 2)         # 2 MB into a 1 MiB file system
    out = _unshare(tmp_path, "rw", cfg, "check")
    assert out["error"].startswith(f"cluster.cache_dir {tmp_path}/mnt/cache has 0.0 GB free, "
                                   "prefetch stages 0.0 GB")
    out = _unshare(tmp_path, "rw", cfg, "skip")     # told there is room: the copy fills it
    assert out["error"].startswith("staging model Qwen/Qwen2.5-VL-3B-Instruct into "
                                   f"cluster.cache_dir {tmp_path}/mnt/cache failed (")
    assert "No space left on device" in out["error"] and "\n" not in out["error"]


def test_each_evaluation_job_gets_a_node_local_mirror_of_the_datasets(paper, tmp_path,
                                                                     monkeypatch):
    from vade.cluster.preflight_cache import check_local_datasets
    from vade.job.config import job_env

    shared = tmp_path / "cache" / "datasets" / "ai4math___math_vista" / "default" / "0.0.0"
    shared.mkdir(parents=True)
    (shared / "dataset_info.json").write_text("{}")
    (shared / "math_vista-testmini.arrow").write_bytes(b"rows")
    (shared.parent / "0.0.0_builder.lock").write_text("")   # another job's lock: not linked
    paper["cluster"]["scratch_dir"] = str(tmp_path / "node")
    env = job_env(paper)
    assert env["LMMS_EVAL_DATASETS_CACHE"].startswith(f"{tmp_path}/node/vade-datasets-${{USER}}-")
    monkeypatch.setenv("USER", "alice")
    [check] = check_local_datasets(paper, env)
    local = Path(env["LMMS_EVAL_DATASETS_CACHE"].replace("${USER}", "alice"))
    assert check.ok and "2 new links; locks stay on this node" in check.detail
    mirrored = local / "ai4math___math_vista" / "default" / "0.0.0"
    assert (mirrored / "math_vista-testmini.arrow").read_bytes() == b"rows"
    assert (mirrored / "math_vista-testmini.arrow").is_symlink()
    assert not (mirrored.parent / "0.0.0_builder.lock").exists()
    (mirrored.parent / "0.0.0_builder.lock").write_text("")   # this job's lock: local only
    assert check_local_datasets(paper, env)[0].detail.count("0 new links") == 1


PREFLIGHT_RO = r"""
import json, sys
from vade.cluster.preflight_cache import check_cache_writable
print(json.dumps(check_cache_writable(json.loads(sys.argv[1]), "evaluate").line()))
"""


def test_a_read_only_cache_fails_preflight_before_a_dataset_loads(tmp_path, paper):
    """An evaluation job's preflight on a cache made read-only after it was staged."""
    if not shutil.which("unshare"):
        pytest.skip("no unshare here")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    paper["cluster"]["cache_dir"] = str(mnt / "cache")
    script = tmp_path / "check.py"
    script.write_text(PREFLIGHT_RO)
    cmd = (f"mount -t tmpfs -o size=1m tmpfs {mnt} && mkdir -p {mnt}/cache/datasets && "
           f"mount -o remount,ro {mnt} && "
           f"{sys.executable} {script} '{json.dumps(paper)}'")
    proc = subprocess.run(["unshare", "-rm", "sh", "-c", cmd], capture_output=True, text=True,
                          timeout=120, check=False)
    if proc.returncode and "mount" in proc.stderr:
        pytest.skip(f"cannot mount a tmpfs in a user namespace here: {proc.stderr[-200:]}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = json.loads(proc.stdout.strip().splitlines()[-1])
    assert line == (f"FAIL cache writable: cluster.cache_dir {mnt}/cache/datasets is not "
                    "writable (Read-only file system) -> make cluster.cache_dir writable for "
                    "the jobs (datasets locks files there)")
