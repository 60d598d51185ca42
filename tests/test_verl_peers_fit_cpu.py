"""verl 0.7.1's own ``RayPPOTrainer.fit`` with each peer (MoPPS, GRESO, MMR1, SEC) as the curriculum
sampler plugin, on CPU, like VADE's fit test (``test_verl_fit_cpu.py``, whose world and runner
this reuses).

Real (the list is in ``tests/fixtures/verl/cpu_fit.py``): verl's trainer, ``fit`` loop, dataset,
``StatefulDataLoader``, sampler loading from the override builder's config, the reward manager
calling the project's ``compute_score``, GRPO advantages, policy loss, checkpoint save/load; the
peer is the lab's class (``vade.sampling.peers``) behind ``VadeCurriculumSampler``. Stand-ins:
only the GPU worker groups (rollout, actor, reference, weight sync), backed by a tabular policy.

10 training prompts, batch 4, G = 3, 6 steps; initial difficulty r = (5 id) mod 9 of 8.

Each peer's uninterrupted fit runs once (``peer_run``). The resume after a kill (two more fits) is
the same plugin code for every peer: greso-skip's (streaks, the epoch walk's position, p_easy and
p_hard) stays in the fast tier, the other three are ``e2e``; each peer's own state round trip is
also checked without verl (``test_sampling_peers.py``) and through the local trainer's resume
(``test_train_peers.py``).
"""

from __future__ import annotations

import duckdb
import numpy as np
import pytest
from peers_cases import peer_state_rows
from test_verl_fit_cpu import (  # noqa: F401 - world is a fixture
    N_TRAIN,
    STEPS,
    G,
    evidence_from_texts,
    history,
    run,
    torch,
    world,
)

from vade.sampling import make_sampler
from vade.train.difficulty import initial_alpha_beta

# the peers verl's curriculum sampler runs: published GRESO needs DAPO's filter and runs on the
# local backend (refused below), as does published MMR1 (its re-scoring rollouts), so its stale
# variant runs here; published SEC reads labels this world's data lacks (its label
# reader is checked below), so its pass-rate variant stands for it here
PEERS = ("mopps", "greso-skip", "mmr1-stale", "sec-passrate")
FAST_RESUME = "greso-skip"


@pytest.fixture(scope="module")
def peer_run(world, request):  # noqa: F811
    """The peer's uninterrupted fit; its tests run together (one trainer alive at a time)."""
    return request.param, run(world, method=request.param, out=f"peer-{request.param}")


def _replay(root, method, events):
    """The peer offline, fed the history's evidence: the batches it draws and its final state."""
    ids = np.arange(N_TRAIN)
    alpha, beta = initial_alpha_beta(str(root / "initial.parquet"), ids)
    inner = make_sampler(method, N_TRAIN, 4, seed=0, alpha=alpha, beta=beta)
    chosen = []
    for step in range(1, STEPS + 1):
        chosen.append(sorted(int(i) for i in inner.select()))
        rows = [e for e in events if e[0] == step]
        inner.observe(np.array([e[1] for e in rows]), np.array([e[2] for e in rows]),
                      np.full(len(rows), G))
    return chosen, inner


@pytest.mark.parametrize("peer_run", PEERS, indirect=True)
def test_peer_draws_verls_batches_and_logs_its_state(world, peer_run):  # noqa: F811
    """Every batch verl's dataloader drew is the peer's choice given the rewards verl scored,
    and the run's ``peer_state`` rows at the last step are the replayed peer's state."""
    root, _ = world
    method, (spec, trainer) = peer_run
    events, _ = history(spec)
    observed: dict[int, dict[int, float]] = {}
    for step, sid, correct, rollouts, _, _ in events:
        assert rollouts == G
        observed.setdefault(step, {})[sid] = correct
    assert observed == evidence_from_texts(trainer.async_rollout_manager.generated)
    drawn = [sorted(set(g["ids"])) for g in trainer.async_rollout_manager.generated]
    chosen, inner = _replay(root, method, events)
    assert chosen == drawn
    with duckdb.connect(str(spec.out_dir / "history.duckdb"), read_only=True) as con:
        assert con.execute("SELECT method, sampler FROM runs").fetchone() == (method, method)
    logged = peer_state_rows(spec.out_dir / "history.duckdb")
    rows = [(sid, name, value) for step, sid, name, value in logged if step == STEPS]
    # step 0: every sample's starting state
    assert {sid for step, sid, _, _ in logged if step == 0} == set(range(N_TRAIN))
    state = inner.sample_state()
    assert rows and {name for _, name, _ in rows} == set(state)
    for sid, name, value in rows:
        assert value == pytest.approx(float(state[name][sid]))


@pytest.mark.parametrize("peer_run", [m if m == FAST_RESUME else pytest.param(m, marks=pytest.mark.e2e)
                                      for m in PEERS], indirect=True)
def test_peer_resume_after_a_kill_replays_identically(world, peer_run):  # noqa: F811
    """Killed in step 5 (after its actor update, before its checkpoint); verl resumes from step
    4's checkpoint and the peer's state with it: same batches, history and weights."""
    method, (spec_a, a) = peer_run
    out = f"peer-{method}-resumed"
    spec_b, first = run(world, method=method, out=out, kill_at=5)
    _, second = run(world, method=method, out=out, attempt=1)
    drawn = {g["step"]: g["ids"] for g in first.async_rollout_manager.generated}
    drawn.update({g["step"]: g["ids"] for g in second.async_rollout_manager.generated})
    assert drawn == {g["step"]: g["ids"] for g in a.async_rollout_manager.generated}
    assert history(spec_b) == history(spec_a)
    assert peer_state_rows(spec_b.out_dir / "history.duckdb") == peer_state_rows(
        spec_a.out_dir / "history.duckdb")
    assert torch.equal(second.policy.logits, a.policy.logits)


def test_greso_has_no_verl_path_and_sec_labels_are_read_by_position():
    """Published GRESO on verl would be verl-recipe's DAPO with a uniform dataloader, not GRESO:
    refused with its name. SEC's labels come from each row's extra_info, in dataset order."""
    from pathlib import Path

    from vade.train.config import TrainConfig
    from vade.train.verl.overrides import RunSpec
    from vade.train.verl.sampler import dataset_labels

    for method in ("greso", "mmr1"):  # mmr1: verl cannot generate its re-scoring rollouts
        with pytest.raises(ValueError, match=f"train.method = '{method}' has no verl path"):
            RunSpec(cfg=TrainConfig(method=method), model="m", model_path=Path("m"),
                    data_dir=Path("d"), out_dir=Path("o"))
    rows = [{"extra_info": {"index": 3, "difficulty": 0.7}}, {"extra_info": {"index": 1}}]
    assert dataset_labels(rows) == [0.7, None]
