"""The judge watched while a repeat runs, and lmms-eval's judge retries bounded.

Why: lmms-eval's judged tasks retry a failed judge call for 15-47 s (patience 5 x provider
retries 5, 10 s apart) and then score the item 0, so a judge that dies half-way (HTTP 500,
connection refused) or hangs (600 s per call) costs about ten hours of a repeat before the check
after the repeat (``JudgeHandle.check``) sees it. Here a thread samples the counting relay every
``interval_s``: the error fraction of the recent calls, calls hanging longer than ``hang_s``, the
served process and ``GET /models``; over a threshold it records the reason and interrupts the
main thread (a signal, so a blocked socket read is interrupted too), which raises
``JudgeWatchdogError`` through lmms-eval: the job stops within a minute or two, with the reason
and no score. ``bounded_retries`` caps every ``ServerConfig`` lmms-eval's tasks build (retries,
delay, per-call timeout) from ``evaluate.judge.watchdog``. A repeat of judged benchmarks that
made no judge call at all fails too (lmms-eval did not reach the judge: nothing was judged).
"""

from __future__ import annotations

import _thread
import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

from vade.eval.judge import wait_ready
from vade.eval.watchdog_config import WatchdogConfig

__all__ = ["JudgeWatchdog", "JudgeWatchdogError", "WatchdogConfig", "bounded_retries",
           "watching"]


class JudgeWatchdogError(RuntimeError):
    """The judge failed while a repeat ran: the job stops, writing no score."""


class _Stop(BaseException):
    """Raised in the main thread by the watchdog's signal. A BaseException, because lmms-eval,
    the OpenAI client and the judged tasks catch ``Exception`` around every judge call (a failed
    call becomes a 0); ``watching`` turns it into ``JudgeWatchdogError``."""


@contextlib.contextmanager
def bounded_retries(cfg: WatchdogConfig) -> Iterator[None]:
    """Every lmms-eval ``ServerConfig`` built inside the block retries at most
    ``max_retries`` times, ``retry_delay_s`` apart, ``call_timeout_s`` per call (lmms-eval's
    tasks hard-code 5, 10 s, 60 s); the class is restored after."""
    try:
        from lmms_eval.llm_judge.protocol import ServerConfig  # lazy: lmms-eval: the eval envs only
    except ImportError:  # no lmms-eval here: nothing to bound
        yield
        return
    original = ServerConfig.__init__

    def bounded(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.num_retries = max(1, min(self.num_retries, cfg.max_retries))
        self.retry_delay = min(self.retry_delay, cfg.retry_delay_s)
        self.timeout = min(self.timeout, cfg.call_timeout_s)

    ServerConfig.__init__ = bounded
    try:
        yield
    finally:
        ServerConfig.__init__ = original


class JudgeWatchdog:
    """Watches one job's judge (a ``vade.eval.judge.JudgeHandle``) from a thread."""

    def __init__(self, handle: Any, cfg: WatchdogConfig, *, judged: bool) -> None:
        self.handle = handle
        self.cfg = cfg
        self.judged = judged
        self.reason: str | None = None
        self._stop = threading.Event()
        self._inflight: dict[int, float] = {}
        self._samples: list[tuple[int, int]] = []   # (calls, failures) per look
        self._unanswered = 0
        self._calls_before_repeat = 0
        relay = handle.relay
        if relay is not None:  # note each judge call's start, to see one that hangs
            base = relay._server.RequestHandlerClass
            inflight = self._inflight

            class Tracked(base):
                def do_POST(self):
                    key = id(self)
                    inflight[key] = time.monotonic()
                    try:
                        super().do_POST()
                    finally:
                        inflight.pop(key, None)

            relay._server.RequestHandlerClass = Tracked

    # -------------------------------------------------------------- checks
    def _error_rate(self) -> str | None:
        relay = self.handle.relay
        if relay is None:
            return None
        now = (relay.calls, relay.failures)
        self._samples.append(now)
        # the oldest look that is at most window_calls calls back
        base = next((s for s in self._samples if now[0] - s[0] <= self.cfg.window_calls),
                    now)
        calls, failures = now[0] - base[0], now[1] - base[1]
        if calls < self.cfg.min_calls:
            return None
        limit = self.handle.cfg.max_error_fraction
        if failures / calls > limit:
            return (f"judge failed on {failures} of its last {calls} calls ({failures / calls:.0%}"
                    f" > evaluate.judge.max_error_fraction {limit:g}; last: "
                    f"{relay.last_error})")
        return None

    def _hung(self) -> str | None:
        now = time.monotonic()
        oldest = max((now - t for t in list(self._inflight.values())), default=0.0)
        if oldest > self.cfg.hang_s:
            return (f"a judge call has had no answer for {oldest:.0f} s (> "
                    f"evaluate.judge.watchdog.hang_s {self.cfg.hang_s:g})")
        return None

    def _alive(self) -> str | None:
        proc = self.handle.proc
        if proc is not None and proc.poll() is not None:
            return f"judge server exited with status {proc.returncode}"
        try:
            wait_ready(self.handle.cfg.base_url, self.handle.cfg.served_name,
                       timeout_s=self.cfg.liveness_timeout_s,
                       poll_s=min(1.0, self.cfg.interval_s),
                       api_key=self.handle.env.get("OPENAI_API_KEY", "EMPTY"), proc=proc)
            self._unanswered = 0
        except (TimeoutError, ValueError, RuntimeError) as exc:
            self._unanswered += 1
            if self._unanswered >= self.cfg.liveness_failures:
                return (f"judge not answering GET /models ({self._unanswered} probes in a row; "
                        f"{exc})")
        return None

    def look(self) -> str | None:
        """One look at the judge: the reason to stop, or None."""
        return self._alive() or self._hung() or self._error_rate()

    # -------------------------------------------------------------- thread
    def _run(self, main_thread_signal: bool) -> None:
        while not self._stop.wait(self.cfg.interval_s):
            reason = self.reason or self.look()
            if reason and not self._stop.is_set():
                if self.reason is None:
                    where = (f" (judge log: {self.handle.log_path})" if self.handle.log_path
                             else "")
                    self.reason = (f"{reason}: the repeat is stopped and no score is "
                                   f"written{where}")
                # again at every look until the block ends: code that swallows even a
                # BaseException once does not keep the repeat going
                if main_thread_signal:
                    os.kill(os.getpid(), signal.SIGUSR1)
                else:
                    _thread.interrupt_main()

    def after_repeat(self, repeat: int) -> None:
        """The end-of-repeat checks: the judge's own (``JudgeHandle.check``), then that a
        repeat with judged benchmarks did call the judge."""
        self.handle.check(repeat)
        relay = self.handle.relay
        if self.judged and relay is not None:
            made = relay.calls - self._calls_before_repeat
            self._calls_before_repeat = relay.calls
            if made == 0:
                raise JudgeWatchdogError(
                    f"repeat {repeat} has judged benchmarks but made no judge call: lmms-eval "
                    f"did not reach the judge (API_TYPE, OPENAI_API_URL, MODEL_VERSION), so "
                    f"nothing was judged and no score is written")


@contextlib.contextmanager
def watching(handle: Any, cfg: WatchdogConfig, *, judged: bool) -> Iterator[JudgeWatchdog]:
    """Watch the judge for the duration of a block (nothing to watch with no judge)."""
    dog = JudgeWatchdog(handle, cfg, judged=judged)
    if handle.cfg.mode == "none":
        yield dog
        return
    main = threading.current_thread() is threading.main_thread()

    def _raise(signum, frame):
        if not dog._stop.is_set():  # a last signal racing the block's end is ignored
            raise _Stop(dog.reason or "judge watchdog")

    old = signal.signal(signal.SIGUSR1, _raise) if main else None
    thread = threading.Thread(target=dog._run, args=(main,), name="judge-watchdog", daemon=True)
    thread.start()
    try:
        with bounded_retries(cfg):
            yield dog
    except _Stop:
        raise JudgeWatchdogError(dog.reason) from None
    except KeyboardInterrupt:
        if dog.reason:  # interrupt_main outside the main thread
            raise JudgeWatchdogError(dog.reason) from None
        raise
    finally:
        dog._stop.set()
        thread.join()
        if main:
            signal.signal(signal.SIGUSR1, old)
