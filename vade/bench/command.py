"""``vade bench sampler`` / ``vade bench reward``: print a table of the cost, write it as JSON."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from vade.bench import reward, sampler


def _size(text: str) -> int:
    value = float(text)
    if value < 1 or value != int(value):
        raise argparse.ArgumentTypeError(f"not a positive whole number: {text}")
    return int(value)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="target", metavar="TARGET", required=True)
    p = sub.add_parser("sampler", help="select+observe per step and DuckDB logging per step")
    p.add_argument("--sizes", nargs="+", type=_size, default=[10**4, 10**5, 10**6, 10**7],
                   help="numbers of samples (1e6 notation accepted)")
    p.add_argument("--batch-size", type=_size, default=512)
    p.add_argument("--steps", type=_size, default=7, help="timed steps per size (median)")
    p.add_argument("--log-steps", type=_size, default=30, help="timed DuckDB step writes")
    p.add_argument("--threads", type=_size, default=None,
                   help="draw threads (default: up to 4, by CPU count)")
    p.add_argument("--out", default="reports/bench/sampler.json")
    r = sub.add_parser("reward", help="the reward on the worst known answers, in a worker thread")
    r.add_argument("--repeats", type=_size, default=5, help="timed runs per answer")
    r.add_argument("--threads", type=_size, default=8,
                   help="threads scoring at once in the threaded case (default 8)")
    r.add_argument("--out", default="reports/bench/reward.json")


def _reward(args: argparse.Namespace) -> dict:
    result = reward.run_all(args.repeats, args.threads)
    print(f"\nreward in a worker thread, {args.repeats} runs per answer "
          f"(target <= {result['target_s']:g} s, score 0)")
    print(f"{'answer':<36} {'median s':>9} {'max s':>7} {'scores':>7}")
    for row in result["reward"]:
        print(f"{row['answer']:<36} {row['median_s']:>9.4f} {row['max_s']:>7.4f} "
              f"{','.join(f'{x:g}' for x in row['scores']):>7}")
    t = result["threaded"]
    print(f"\n{t['threads']} threads at once, {t['rounds']} calls each: "
          f"{t['threads'] - 1} on {t['hard_answer']} (killed at the budget): max "
          f"{t['hard_max_s']:.3f} s, median {t['hard_median_s']:.3f} s; 1 on "
          f"{t['easy_answer']}: {t['easy_s']} s, scores {t['easy_scores']}")
    return result


def _sampler(args: argparse.Namespace) -> dict:
    result = sampler.run_all(args.sizes, args.batch_size, args.steps, args.threads, args.log_steps)
    print(f"\nVADE sampler, batch {args.batch_size}, median of {args.steps} steps "
          f"({result['machine']['cpu_count']} CPUs, numpy {result['machine']['numpy']})")
    print(f"{'n_samples':>12} {'select+observe ms':>18} {'select ms':>10} {'observe ms':>11}"
          f" {'ns/sample':>10} {'peak B/sample':>14}")
    for row in result["sampler"]:
        print(f"{row['n_samples']:>12,} {row['select_observe_ms_median']:>18.2f}"
              f" {row['select_ms_median']:>10.2f} {row['observe_ms_median']:>11.2f}"
              f" {row['ns_per_sample']:>10.2f} {row['peak_bytes_per_sample']:>14.1f}")
    log = result["logging"]
    print(f"\nDuckDB: {log['events_per_step']} events per step: median "
          f"{log['log_step_ms_median']:.2f} ms (p90 {log['log_step_ms_p90']:.2f} ms); "
          f"snapshot of {log['snapshot_samples']:,} samples: {log['snapshot_ms']:.0f} ms")
    return result


# TARGET -> measures it and prints its table; run() writes the result as JSON to --out
TARGETS = {"sampler": _sampler, "reward": _reward}


def run(args: argparse.Namespace) -> int:
    result = TARGETS[args.target](args)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
    return 0
