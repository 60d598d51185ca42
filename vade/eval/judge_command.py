"""``vade judge``: run the LLM judge endpoint for a workflow (``serve``) or wait for one (``wait``).

``vade judge serve`` starts vLLM with ``evaluate.judge``, waits until it serves the judge's
name, writes the endpoint's environment (JSON) to ``--ready-file`` atomically, then stays in the
foreground until SIGTERM/SIGINT, when it stops the server. A Snakemake rule can run it as a
``service`` job (or a user in a separate SLURM job) while evaluation jobs use
``evaluate.judge.mode: external`` with the same URL. ``vade judge wait`` blocks until an
endpoint answers (for a rule that must not start before the judge is up).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import time
from pathlib import Path

from vade.config_io import add_config_arguments, load_config, section
from vade.eval import judge
from vade.eval.config import EvaluateConfig

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser)
    parser.add_argument("action", choices=("serve", "wait"))
    parser.add_argument("--ready-file", metavar="FILE",
                        help="serve: write the judge environment here (JSON) once ready")
    parser.add_argument("--log", metavar="FILE", help="serve: the vLLM server's log")


def run(args: argparse.Namespace) -> int:
    cfg = EvaluateConfig.from_dict(section(load_config(args), "evaluate", required=False)).judge
    if cfg.mode == "serve" and cfg.port is None:
        raise ValueError("vade judge serve needs evaluate.judge.port: the fixed address that "
                         "evaluation jobs (evaluate.judge.mode: external) are given")
    env = judge.judge_env(cfg)
    if args.action == "wait":
        judge.wait_ready(env["OPENAI_API_URL"], cfg.served_name, timeout_s=cfg.ready_timeout_s,
                         api_key=env["OPENAI_API_KEY"])
        print(f"judge ready at {env['OPENAI_API_URL']} ({cfg.served_name})")
        return 0
    if cfg.mode != "serve":
        raise ValueError("vade judge serve needs evaluate.judge.mode: serve")
    proc = judge.serve(cfg, args.log)
    stopping = {"flag": False}

    def _stop(signum, frame):
        stopping["flag"] = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    try:
        judge.wait_ready(env["OPENAI_API_URL"], cfg.served_name, timeout_s=cfg.ready_timeout_s,
                         api_key=env["OPENAI_API_KEY"], proc=proc)
        if args.ready_file:
            out = Path(args.ready_file)
            out.parent.mkdir(parents=True, exist_ok=True)
            tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
            public = {k: v for k, v in env.items() if k != "OPENAI_API_KEY"}
            tmp.write_text(json.dumps(public, sort_keys=True) + "\n")
            os.replace(tmp, out)
        print(f"judge ready at {env['OPENAI_API_URL']} ({cfg.served_name}); SIGTERM stops it",
              flush=True)
        while not stopping["flag"] and proc.poll() is None:
            time.sleep(1)
        if proc.poll() is not None and not stopping["flag"]:
            raise RuntimeError(f"judge server exited with status {proc.returncode}")
    finally:
        judge.stop(proc)
    return 0
