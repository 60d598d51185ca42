"""A dead or hung judge costs a minute, not hours: the watchdog stops the repeat with the reason.

Real: a judge server process on 127.0.0.1 (a stub of vLLM's OpenAI server, started by
``running_judge`` as it starts vLLM), the counting relay, the watchdog thread and its signal,
and lmms-eval's own judge client and retry loop (``get_server`` / ``ServerConfig`` with
MathVista's settings: 5 retries, 10 s apart, 60 s per call), which the bounded retry budget caps.
Every wait comes from the watchdog config the test passes (``FAST``: a look every 0.1 s, a call
hung after 0.5 s): a failing judge is caught in about a second, not the minutes the production
defaults allow, and each bound below is still far under what the unwatched client would take.
Stand-in: the policy's generation; the "repeat" is the judge calls a judged lmms-eval task makes,
one per item, each failure scored 0 as lmms-eval does. Task preloading uses lmms-eval's own
TaskManager on local parquet tasks.
"""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest
from test_eval import write_eval_set
from test_eval_judge import STUB

from vade.eval.config import JudgeConfig
from vade.eval.judge import running_judge
from vade.eval.watchdog import JudgeWatchdogError, WatchdogConfig, bounded_retries, watching

# A judge that answers its model list but never a completion (a wedged vLLM engine).
HANG = STUB.replace('''    def do_POST(self):
''', '''    def do_POST(self):
        import time
        time.sleep(3600)
''')

FAST = WatchdogConfig(interval_s=0.1, min_calls=5, hang_s=0.5, liveness_timeout_s=0.5,
                      liveness_failures=2, max_retries=2, retry_delay_s=0.1)


class _Deadline(BaseException):
    """The test's own limit: a repeat the watchdog failed to stop ends here (lmms-eval's
    except-Exception around judge calls would swallow an ordinary exception)."""


@pytest.fixture(autouse=True)
def deadline():
    def _fail(signum, frame):
        raise _Deadline("the watchdog did not stop the repeat within 150 s")

    old = signal.signal(signal.SIGALRM, _fail)
    signal.alarm(150)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def _repeat(items: int, on_item=None) -> int:
    """One repeat's judge calls, as lmms-eval's MathVista task makes them; returns items done."""
    from lmms_eval.llm_judge import Request, ServerConfig, get_server

    done = 0
    for i in range(items):
        server = get_server(server_name=os.environ["API_TYPE"], config=ServerConfig(
            model_name=os.environ["MODEL_VERSION"], max_tokens=16, timeout=60, num_retries=5,
            retry_delay=10))
        try:
            server.evaluate(Request(messages=[{"role": "user", "content": f"item {i}"}]))
        except Exception:  # noqa: BLE001, S110  (lmms-eval scores a failed judgement 0)
            pass
        done += 1
        if on_item:
            on_item(i)
    return done


def _judge(tmp_path, script: str, *args: str):
    path = tmp_path / "judge.py"
    path.write_text(script)
    cfg = JudgeConfig(mode="serve", served_name="j", ready_timeout_s=60,
                      max_error_fraction=0.1)
    return running_judge(cfg, tmp_path / "judge.log",
                         command=[sys.executable, str(path), "{port}", "{served_name}", *args],
                         tag="t")


def test_judge_dying_half_way_stops_the_repeat_within_seconds(tmp_path):
    t0 = time.monotonic()
    with pytest.raises(JudgeWatchdogError) as err, _judge(tmp_path, STUB) as judge, \
            watching(judge, FAST, judged=True):
        def die_at_10(i):
            if i == 10:
                os.killpg(judge.proc.pid, signal.SIGKILL)
        _repeat(1000, die_at_10)
    elapsed = time.monotonic() - t0
    assert elapsed < 120, elapsed
    msg = str(err.value)
    assert "judge server exited with status -9" in msg
    assert "the repeat is stopped and no score is written" in msg and "judge.log" in msg


def test_judge_failing_half_way_trips_on_its_recent_error_rate(tmp_path):
    """The server stays up but answers HTTP 500 after 10 completions: 990 items x up to
    5 x 5 attempts 10 s apart would take days; the recent error fraction stops it."""
    t0 = time.monotonic()
    with pytest.raises(JudgeWatchdogError) as err, _judge(tmp_path, STUB, "10") as judge, \
            watching(judge, FAST, judged=True):
        _repeat(1000)
    assert time.monotonic() - t0 < 120
    assert "> evaluate.judge.max_error_fraction 0.1" in str(err.value)
    assert "CUDA out of memory" in str(err.value)


def test_hung_judge_stops_the_repeat_blocked_in_its_call(tmp_path):
    """The client waits up to 60 s per call and 5 retries; the watchdog interrupts the read."""
    t0 = time.monotonic()
    with pytest.raises(JudgeWatchdogError) as err, _judge(tmp_path, HANG) as judge, \
            watching(judge, FAST, judged=True):
        _repeat(100)
    elapsed = time.monotonic() - t0
    assert elapsed < 60, elapsed  # hang_s + a look every interval_s, not 60 s x retries
    assert "a judge call has had no answer for" in str(err.value)
    assert f"evaluate.judge.watchdog.hang_s {FAST.hang_s:g})" in str(err.value)


def test_a_healthy_judge_is_left_alone_and_zero_calls_fail_the_repeat(tmp_path):
    with _judge(tmp_path, STUB) as judge, watching(judge, FAST, judged=True) as dog:
        looks: list[str | None] = []
        look = dog.look
        dog.look = lambda: looks.append(look()) or looks[-1]  # every look the thread takes
        assert _repeat(8) == 8
        after = len(looks) + 3  # a few looks after the calls, none of them a reason to stop
        deadline = time.monotonic() + 60
        while len(looks) < after and time.monotonic() < deadline:
            time.sleep(FAST.interval_s)
        assert len(looks) >= after and set(looks) == {None}, looks
        dog.after_repeat(0)
        assert dog.reason is None
        with pytest.raises(JudgeWatchdogError, match="repeat 1 has judged benchmarks but made "
                                                     "no judge call"):
            dog.after_repeat(1)


def test_retry_budget_is_bounded_inside_the_block_only():
    from lmms_eval.llm_judge import ServerConfig

    cfg = WatchdogConfig(max_retries=2, retry_delay_s=1.5, call_timeout_s=30)
    with bounded_retries(cfg):
        inside = ServerConfig(model_name="m", num_retries=5, retry_delay=10, timeout=60)
    after = ServerConfig(model_name="m", num_retries=5, retry_delay=10, timeout=60)
    assert (inside.num_retries, inside.retry_delay, inside.timeout) == (2, 1.5, 30)
    assert (after.num_retries, after.retry_delay, after.timeout) == (5, 10, 60)


def test_watchdog_config_names_bad_keys():
    with pytest.raises(ValueError, match="config key 'evaluate.judge.watchdog.hang' is unknown"):
        JudgeConfig.from_dict({"watchdog": {"hang": 3}})
    with pytest.raises(ValueError, match="evaluate.judge.watchdog.max_retries"):
        JudgeConfig.from_dict({"watchdog": {"max_retries": 0}})
    assert JudgeConfig.from_dict({"watchdog": {"hang_s": 30}}).watchdog.hang_s == 30.0


def test_tasks_load_before_any_model_and_a_broken_one_is_named(tmp_path):
    from lmms_eval.tasks import TaskManager

    from vade.eval.preload import preload_tasks
    from vade.eval.taskgen import local_benchmarks, write_local_tasks

    write_eval_set(tmp_path / "eval" / "math.parquet", n=7, domain="math")
    local = local_benchmarks(tmp_path / "eval")
    write_local_tasks(local, tmp_path / "tasks", max_new_tokens=8, temperature=0.6, top_p=1.0)
    manager = TaskManager("WARNING", include_path=[str(tmp_path / "tasks")],
                          include_defaults=False, model_name="qwen2_5_vl")
    benches = [b for b, _ in local]
    assert preload_tasks(benches, manager) == {benches[0].name: 7}
    (tmp_path / "eval" / "math.parquet").unlink()
    with pytest.raises(ValueError, match=r"benchmark math .*its dataset did not load"):
        preload_tasks(benches, manager)
    import dataclasses
    typo = dataclasses.replace(benches[0], task="vade_no_such_task")
    with pytest.raises(ValueError, match="lmms-eval knows no task or group of that name"):
        preload_tasks([typo], manager)
