"""What a first GPU job of verl needs and the CPU can check: attention without a compiler, Ray's
CPUs from the allocation, and the time-limit checkpoint through verl's own expiration hook.

Real: verl 0.7.1's Hydra config composed with our overrides, verl's trainer module (its imported
``should_save_ckpt_esi`` replaced), the guard's flag file. Stand-in: SLURM's environment
variables (a dict) and the trainer object (``Trainer`` below, one attribute), since verl's fit
needs GPUs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("verl")

from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
from test_verl_overrides import spec, verl_config_dir

from vade.job.cpus import allocated_cpus
from vade.train.verl import timelimit
from vade.train.verl.config import VerlConfig
from vade.train.verl.overrides import build_overrides


def test_sdpa_by_default_and_flash_attn_only_when_asked():
    s = spec()
    flash = s.__class__(**{**s.__dict__, "cfg": s.cfg.__class__(**{
        **s.cfg.__dict__, "verl": VerlConfig(attention="flash_attention_2")})})
    with initialize_config_dir(config_dir=verl_config_dir(), version_base=None):
        default = OmegaConf.to_container(compose("ppo_trainer", overrides=build_overrides(s)))
        fa = OmegaConf.to_container(compose("ppo_trainer", overrides=build_overrides(flash)))
    model = default["actor_rollout_ref"]["model"]
    # verl reads override_config.attn_implementation (fsdp_workers: default flash_attention_2)
    assert model["override_config"]["attn_implementation"] == "sdpa"
    assert model["use_remove_padding"] is False   # it imports flash_attn.bert_padding on CUDA
    fa_model = fa["actor_rollout_ref"]["model"]
    assert fa_model["override_config"]["attn_implementation"] == "flash_attention_2"
    assert fa_model["use_remove_padding"] is True
    with pytest.raises(ValueError, match="'train.verl.attention' must be one of"):
        VerlConfig.from_dict({"attention": "flash"})


def test_ray_cpus_come_from_the_allocation():
    assert allocated_cpus({"SLURM_CPUS_PER_TASK": "32"}) == (32, "SLURM_CPUS_PER_TASK")
    assert allocated_cpus({"SLURM_JOB_CPUS_PER_NODE": "16(x2)"}) == (16,
                                                                     "SLURM_JOB_CPUS_PER_NODE")
    assert allocated_cpus({"SLURM_CPUS_ON_NODE": "12", "SLURM_JOB_ID": "7"}) == (
        12, "SLURM_CPUS_ON_NODE")
    n, source = allocated_cpus({})
    assert n == len(os.sched_getaffinity(0)) and source.startswith("os.sched_getaffinity")


def test_ray_cpus_from_scontrol_in_a_job_step_without_cpu_variables(tmp_path):
    """SLURM 22.05 sets neither SLURM_CPUS_PER_TASK nor SLURM_JOB_CPUS_PER_NODE in a job step;
    main fell back to the process's affinity (every CPU of a node without cgroups). Stand-in:
    ``scontrol`` on PATH, a script printing what SLURM 22.05's ``scontrol show job -o`` prints
    for a 2-node job of 24 CPUs; real: the lookup, the call and the parsing."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "scontrol").write_text(
        "#!/bin/sh\n[ \"$*\" = \"show job -o 4242\" ] || exit 1\n"
        "echo 'JobId=4242 JobName=train UserId=u(1) NodeList=n[1-2] NumNodes=2 NumCPUs=24 "
        "NumTasks=2 CPUs/Task=12 ReqB:S:C:T=0:0:*:*'\n")
    (bin_ / "scontrol").chmod(0o755)
    env = {"SLURM_JOB_ID": "4242", "PATH": str(bin_)}
    assert allocated_cpus(env) == (12, "scontrol show job 4242 (NumCPUs / NumNodes)")
    n, source = allocated_cpus({**env, "SLURM_JOB_ID": "99"})   # scontrol fails: affinity
    assert source.startswith("os.sched_getaffinity")
    with initialize_config_dir(config_dir=verl_config_dir(), version_base=None):
        c = compose("ppo_trainer", overrides=[*build_overrides(spec()),
                                              "ray_kwargs.ray_init.num_cpus=32"])
    assert c.ray_kwargs.ray_init.num_cpus == 32   # the key verl passes to ray.init


def test_verls_expiration_hook_checkpoints_then_stops(tmp_path, monkeypatch):
    from verl.trainer.ppo import ray_trainer

    flag, stop = tmp_path / "checkpoint-now", tmp_path / "time-stop.json"
    monkeypatch.setenv("VADE_CHECKPOINT_FLAG", str(flag))
    monkeypatch.setenv("VADE_TIME_STOP", str(stop))
    monkeypatch.setattr(timelimit, "_STATE", {"guard": None, "reason": None})
    monkeypatch.setattr(ray_trainer, "should_save_ckpt_esi", ray_trainer.should_save_ckpt_esi)
    timelimit.install(ray_trainer)
    assert ray_trainer.should_save_ckpt_esi is timelimit.should_checkpoint
    # what fit calls after each update: no signal, no end time -> no forced checkpoint
    assert ray_trainer.should_save_ckpt_esi(max_steps_duration=300.0, redundant_time=0) is False
    timelimit.stop_if_due(7)                     # a periodic checkpoint: fit goes on
    flag.write_text("URG")                       # the launcher got SLURM's warning
    assert ray_trainer.should_save_ckpt_esi(max_steps_duration=300.0, redundant_time=0) is True
    with pytest.raises(timelimit.TimeLimitStop, match="checkpointed step 8 and stopped"):
        timelimit.stop_if_due(8)                 # after fit's forced checkpoint
    assert json.loads(stop.read_text())["step"] == 8


def test_the_ppo_entry_installs_the_hook_in_the_trainer_module(monkeypatch):
    from verl.trainer.ppo import ray_trainer

    from vade.train.verl import ppo_entry

    monkeypatch.setattr(ray_trainer, "should_save_ckpt_esi", ray_trainer.should_save_ckpt_esi)
    ppo_entry.install()
    assert ray_trainer.should_save_ckpt_esi is timelimit.should_checkpoint


def test_the_launcher_relays_the_signal_and_reports_the_stop_in_one_line(tmp_path, monkeypatch):
    """``launch`` with verl replaced by a stand-in: the launcher's process gets SIGURG while
    verl runs, the stand-in sees the flag file (what the actor's guard reads), writes the stop
    file as ``stop_if_due`` would and exits 1; the launcher raises one line, not verl's status."""
    import signal

    import pyarrow as pa
    import pyarrow.parquet as pq

    from vade.job.timelimit import TimeLimitReached
    from vade.train.config import TrainConfig
    from vade.train.verl import launch as launch_mod

    config = {"name": "exp", "train": {"backend": "verl", "verl": {}},
              "tracking": {"enabled": False}}
    cfg = TrainConfig.from_config(config, algorithm="grpo", method="vanilla", seed=0)
    (tmp_path / "data").mkdir()
    for name in ("train", "val"):
        pq.write_table(pa.table({"data_source": ["geo3k"] * 4}),
                       tmp_path / "data" / f"{name}.parquet")
    monkeypatch.setenv("SLURM_CPUS_PER_TASK", "24")
    monkeypatch.setenv("SLURM_JOB_END_TIME", "1700000000")
    seen = {}

    def verl(cmd, env, log_path):
        os.kill(os.getpid(), signal.SIGURG)          # SLURM's warning reaches the launcher
        seen.update(cmd=cmd, flag=Path(env["VADE_CHECKPOINT_FLAG"]).read_text())
        Path(env["VADE_TIME_STOP"]).write_text(json.dumps({"step": 21, "reason": "SIGURG"}))
        return 1

    before = {s: signal.getsignal(s) for s in (signal.SIGUSR1, signal.SIGURG)}
    monkeypatch.setattr(launch_mod, "_stream", verl)
    try:
        with pytest.raises(TimeLimitReached, match=r"checkpointed step 21 and stopped: SIGURG; "
                                                   r"run it again"):
            launch_mod.launch(cfg, model="m", model_path="m", data_dir=tmp_path / "data",
                              difficulty=None, out_dir=tmp_path / "run")
    finally:
        for s, h in before.items():
            signal.signal(s, h)
    assert seen["flag"] == "SIGURG"
    assert "ray_kwargs.ray_init.num_cpus=24" in seen["cmd"]
    assert ("+ray_kwargs.ray_init.runtime_env.env_vars.SLURM_JOB_END_TIME='1700000000.0'"
            in seen["cmd"])
