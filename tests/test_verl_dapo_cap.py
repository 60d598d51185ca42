"""DAPO's global rollout cap and stop bookkeeping, through a stand-in of the recipe's loop (CPU).

Real: the capped trainer subclass (``vade.train.verl.dapo_entry``), its ``BudgetedLoader``, the
recorder and its DuckDB history, torchdata's ``StatefulDataLoader`` and ``data.pt`` checkpoints.
Stand-in: the recipe's ``RayDAPOTrainer`` (``tests/fixtures/verl/recipe_loop.py`` copies its
loop's control flow; generation and training are replaced by a keep rule).

The numbers, worked by hand. 8 prompts, train and gen batch 2, n = 2, 1 base epoch, factor 3:
a normal run is 4 steps x 2 x 2 = 16 rollouts, the budget 48 rollouts = 12 generation batches.
Only prompts 0 and 4 are informative, the loader is sequential ([0,1] [2,3] [4,5] [6,7]): step 1
takes 3 batches, steps 2 and 3 four each (11), the 12th batch ([6,7]) keeps nothing and the
budget cannot pay for a 13th: 3 steps trained, 1 batch unfinished, rollouts per step 12, 16, 20.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import duckdb
import pytest
import torch
from omegaconf import OmegaConf

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "verl"))

from recipe_loop import Killed, PromptSet, RecipeLoopStandIn

from vade.train.verl.dapo_cap import BudgetedLoader, generation_budget
from vade.train.verl.dapo_entry import capped_trainer_class

KEEP_0_4 = {0, 4}.__contains__


def config(tmp_path, *, save_freq=2, test_freq=2, max_num_gen_batches=0, logger=("console",)):
    return OmegaConf.create({
        "vade_dapo": {"run_id": "m-grpo-dapo-s0", "store": str(tmp_path / "history.duckdb"),
                      "stop_file": str(tmp_path / "stop.json"), "tracking_uri": None,
                      "base_steps": 4, "max_rollout_factor": 3.0},
        "data": {"train_batch_size": 2, "gen_batch_size": 2},
        "algorithm": {"filter_groups": {"max_num_gen_batches": max_num_gen_batches}},
        "trainer": {"total_epochs": 3, "total_training_steps": None, "save_freq": save_freq,
                    "test_freq": test_freq, "val_before_train": False, "logger": list(logger),
                    "default_local_dir": str(tmp_path / "checkpoints")},
        "actor_rollout_ref": {"rollout": {"n": 2}}})


def attempt(tmp_path, keep=KEEP_0_4, kill=None, **cfg):
    trainer = capped_trainer_class(RecipeLoopStandIn)(config(tmp_path, **cfg),
                                                      train_dataset=PromptSet(8), keep=keep,
                                                      kill=kill)
    try:
        trainer.fit()
    except Killed:
        trainer._vade.store.close()  # the process died: its history connection is gone
    return trainer


def history(tmp_path):
    con = duckdb.connect(str(tmp_path / "history.duckdb"), read_only=True)
    try:
        steps = con.execute("SELECT step, rollouts, rollouts_cumulative FROM step_summary "
                            "ORDER BY step").fetchall()
        events = con.execute("SELECT step, sample_id, correct, rollouts FROM events "
                             "ORDER BY step, sample_id").fetchall()
    finally:
        con.close()
    return steps, events


def stop(tmp_path):
    return json.loads((tmp_path / "stop.json").read_text())


def latest_checkpoint(tmp_path):
    return int((tmp_path / "checkpoints" / "latest_checkpointed_iteration.txt").read_text())


def test_budget_in_generation_batches():
    # 4 steps x 2 prompts x 2 rollouts = 16, x 3 = 48 rollouts = 12 batches of 2 x 2
    assert generation_budget(train_batch_size=2, gen_batch_size=2, n=2, base_steps=4,
                             factor=3.0) == (48, 12)
    # 2 steps x 4 x 8 = 64 rollouts, x 2.5 = 160; a gen batch of 6 prompts costs 48 ->
    # 3 batches (144), the 4th cannot be paid for
    assert generation_budget(train_batch_size=4, gen_batch_size=6, n=8, base_steps=2,
                             factor=2.5) == (160, 3)
    with pytest.raises(ValueError, match="gen_batch_size"):
        generation_budget(train_batch_size=2, gen_batch_size=0, n=2, base_steps=4, factor=3.0)
    with pytest.raises(ValueError, match="base_steps"):
        generation_budget(train_batch_size=2, gen_batch_size=2, n=2, base_steps=0, factor=3.0)


def test_budgeted_loader_never_draws_an_unpaid_batch():
    from torchdata.stateful_dataloader import StatefulDataLoader

    inner = StatefulDataLoader(list(range(8)), batch_size=2, drop_last=True, collate_fn=list)
    loader = BudgetedLoader(inner, limit=3)
    assert [b for b in loader] == [[0, 1], [2, 3], [4, 5]] and loader.exhausted
    assert list(loader) == [] and loader.used == 3
    # the inner loader stopped after 3 batches: its state resumes at [6, 7]
    again = StatefulDataLoader(list(range(8)), batch_size=2, drop_last=True, collate_fn=list)
    resumed = BudgetedLoader(again, limit=5)
    resumed.load_state_dict(loader.state_dict())
    assert resumed.used == 3 and list(resumed) == [[6, 7]] and list(resumed) == [[0, 1]]
    assert resumed.exhausted and len(resumed) == 4


def test_uninterrupted_run_stops_at_the_cap_with_everything_counted(tmp_path, monkeypatch):
    log = tmp_path / "attempt.jsonl"
    log.write_text(json.dumps({"step": 2, "data": {"val-core/src/acc/mean@1": 0.4}}) + "\n")
    monkeypatch.setenv("VERL_FILE_LOGGER_PATH", str(log))
    t = attempt(tmp_path, logger=("console", "file"))
    assert len(t.generated) == 12 and t.generated[-1] == [6, 7]
    assert stop(tmp_path) == {"reason": "rollout_cap", "steps_trained": 3,
                              "total_training_steps": 4, "gen_batches_used": 12,
                              "gen_batches_unfinished": 1, "gen_batch_limit": 12,
                              "rollouts_generated": 48, "rollout_budget_batches": 48}
    steps, events = history(tmp_path)
    # the unfinished 12th batch (4 rollouts) is charged to step 3: the cost axis ends at 48
    assert steps == [(1, 12, 12), (2, 16, 28), (3, 20, 48)]
    assert events == [(s, i, 1.0, 2.0) for s in (1, 2, 3) for i in (0, 4)]
    # checkpoint named after the last trained step; validation at step 2 (test_freq) and a
    # final one at step 3, appended to verl's file log
    assert t.saved == [2, 3] and latest_checkpoint(tmp_path) == 3
    assert t.validated == [2, 3]
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert records[-1] == {"step": 3, "data": {"val-core/src/acc/mean@1": 0.5}}


@pytest.mark.parametrize("save_freq, kill_step", [(2, 3), (1, 2), (1, 3)])
def test_cap_holds_across_a_resume(tmp_path, save_freq, kill_step):
    """Killed after the checkpoint of step k-1, before step k's update; resumed through the
    loop's own ``_load_checkpoint``. The recipe alone would restart its epoch count at
    (k-1) // 4 = 0 and generate 15 batches in all (it trains step 4)."""
    ref = attempt(tmp_path / "ref", save_freq=save_freq)
    first = attempt(tmp_path / "run", save_freq=save_freq, kill={"update": kill_step})
    ckpt = latest_checkpoint(tmp_path / "run")
    assert ckpt == kill_step - 1
    second = attempt(tmp_path / "run", save_freq=save_freq)
    used_before = {1: 3, 2: 7}[ckpt]   # generation batches of steps 1..ckpt
    assert used_before + len(second.generated) == 12
    assert first.generated[:used_before] + second.generated == ref.generated
    assert history(tmp_path / "run") == history(tmp_path / "ref")
    assert stop(tmp_path / "run") == stop(tmp_path / "ref")
    assert latest_checkpoint(tmp_path / "run") == stop(tmp_path / "run")["steps_trained"] == 3


def test_resume_forgets_history_after_the_checkpoint(tmp_path):
    # step 3 trains and is recorded, then the job dies before any checkpoint of step 3
    attempt(tmp_path, kill={"after_step": 3})
    assert [s for s, *_ in history(tmp_path)[0]] == [1, 2, 3]
    t = capped_trainer_class(RecipeLoopStandIn)(config(tmp_path), train_dataset=PromptSet(8),
                                                keep=KEEP_0_4)
    t.global_steps = 0
    t._load_checkpoint()
    assert t.global_steps == 2 and t.train_dataloader.used == 7
    t._vade.store.close()
    assert [s for s, *_ in history(tmp_path)[0]] == [1, 2]


def test_checkpoint_without_a_count_is_counted_from_the_history(tmp_path):
    attempt(tmp_path, kill={"update": 3})
    data = tmp_path / "checkpoints" / "global_step_2" / "data.pt"
    state = torch.load(data, weights_only=False)
    torch.save(state["loader"], data)   # as written before the count was saved with it
    second = attempt(tmp_path)
    assert len(second.generated) == 12 - 7
    assert stop(tmp_path)["gen_batches_used"] == 12


def test_completed_run_and_per_step_limit(tmp_path):
    t = attempt(tmp_path / "all", keep=lambda i: True)
    info = stop(tmp_path / "all")
    assert (info["reason"], info["steps_trained"], info["gen_batches_used"]) == ("completed", 4, 4)
    assert t.validated == [2, 4] and latest_checkpoint(tmp_path / "all") == 4
    # recipe's per-step limit: step 2 needs a 4th batch, 3 allowed -> ValueError, caught
    t = attempt(tmp_path / "lim", max_num_gen_batches=3)
    info = stop(tmp_path / "lim")
    assert (info["reason"], info["steps_trained"], info["gen_batches_unfinished"]) == (
        "max_gen_batches", 1, 3)
    assert t.saved == [1] and t.validated == [1]
    assert history(tmp_path / "lim")[0] == [(1, 12 + 12, 24)]


def test_capped_trainer_lets_the_budget_not_the_epochs_bound_the_run(tmp_path):
    """The run's length is train.steps (total_training_steps) and its generation the budget: an
    epoch count too small for the budget is raised (12 batches, 4 per epoch -> 4 epochs)."""
    cfg = config(tmp_path)
    cfg.trainer.total_epochs = 1
    t = capped_trainer_class(RecipeLoopStandIn)(cfg, train_dataset=PromptSet(8), keep=KEEP_0_4)
    assert t.config.trainer.total_training_steps == 4
    assert t.config.trainer.total_epochs == 4 and t.train_dataloader.limit == 12
