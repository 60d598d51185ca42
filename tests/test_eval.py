"""`vade evaluate`: lmms-eval on a tiny Qwen2.5-VL with one local task on CPU (scores routed
through the reward, k seeded repeats, DuckDB + MLflow rows), result extraction, config errors."""

from __future__ import annotations

import io
import json
import os

import pytest
from mlflow_store import fresh_store

from vade.eval.config import Benchmark, EvaluateConfig, JudgeConfig
from vade.eval.runner import benchmark_score, target_for

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "disabled")

N_ROWS = 4


# ---------------------------------------------------------------- fixtures


def _png(i: int) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (56, 56), (40 * i % 255, 100, 150)).save(buf, "PNG")
    return buf.getvalue()


def _row(i: int, domain: str = "math") -> dict:
    return {"data_source": f"synthetic/{domain}",
            "prompt": [{"role": "system", "content": "Reason, then answer."},
                       {"role": "user",
                        "content": f"<image>What is {i}+1? Answer in \\boxed{{}}."}],
            "images": [{"bytes": _png(i), "path": None}], "ability": domain,
            "reward_model": {"style": "rule", "ground_truth": str(i + 1)},
            "extra_info": {"split": "test", "index": 1000 + i, "uid": f"u{i}", "task": domain,
                           "domain": domain, "answer_type": "number", "question": "q",
                           "answer": str(i + 1)}}


def write_eval_set(path, n: int = N_ROWS, domain: str = "math") -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist([_row(i, domain) for i in range(n)]), path)


_SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
            "<|image_pad|>", "<|video_pad|>"]
_CHAT = ("{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
         "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
         "{% for c in message['content'] %}{% if c['type'] == 'image' %}"
         "<|vision_start|><|image_pad|><|vision_end|>{% elif c['type'] == 'text' %}{{ c['text'] }}"
         "{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
         "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def build_tiny_qwen(out) -> None:
    """A ~0.2M-parameter Qwen2.5-VL (2 text layers, vision depth 2) with a small BPE tokenizer
    carrying the Qwen special tokens, saved with save_pretrained (what lmms-eval loads)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2_5_VLProcessor,
        Qwen2TokenizerFast,
        Qwen2VLImageProcessor,
        Qwen2VLVideoProcessor,
    )

    torch.set_num_threads(1)
    corpus = ["What is 3 + 4? Answer in \\boxed{7}.", "Reason, then answer. system user",
              "the answer is 0 1 2 3 4 5 6 7 8 9 A B C D yes no"] * 10
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(corpus, trainers.BpeTrainer(
        vocab_size=400, special_tokens=_SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    hf = Qwen2TokenizerFast(tokenizer_object=tok, vocab_file=None, merges_file=None,
                            unk_token=None, bos_token=None, eos_token="<|im_end|>",
                            pad_token="<|endoftext|>", chat_template=_CHAT)
    proc = Qwen2_5_VLProcessor(image_processor=Qwen2VLImageProcessor(min_pixels=28 * 28 * 4,
                                                                     max_pixels=28 * 28 * 16),
                               video_processor=Qwen2VLVideoProcessor(), tokenizer=hf,
                               chat_template=_CHAT)
    ids = {t: hf.convert_tokens_to_ids(t) for t in _SPECIAL}
    cfg = Qwen2_5_VLConfig(
        text_config={"vocab_size": len(hf), "hidden_size": 64, "intermediate_size": 128,
                         "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                         "max_position_embeddings": 2048, "tie_word_embeddings": True,
                         "rope_scaling": {"type": "mrope", "mrope_section": [2, 3, 3]},
                         "eos_token_id": ids["<|im_end|>"], "pad_token_id": ids["<|endoftext|>"]},
        vision_config={"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2,
                           "out_hidden_size": 64, "fullatt_block_indexes": [1], "window_size": 112},
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
        eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"])
    torch.manual_seed(0)
    model = Qwen2_5_VLForConditionalGeneration(cfg)
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    model.save_pretrained(out)
    proc.save_pretrained(out)


# ---------------------------------------------------------------- pure parts


def test_benchmark_score_weights_group_subtasks_by_items():
    res = {"results": {"a": {"acc,none": 0.5, "acc_stderr,none": 0.1}, "b": {"acc,none": 0.1}},
           "group_subtasks": {"g": ["a", "b"]},
           "n-samples": {"a": {"original": 10, "effective": 10},
                         "b": {"original": 30, "effective": 30}}}
    score, n = benchmark_score(res, Benchmark("G", "g", "acc", 100.0))
    assert score == pytest.approx(20.0) and n == 40  # (0.5*10 + 0.1*30) / 40 = 0.2
    with pytest.raises(ValueError, match="no metric 'relaxed'"):
        benchmark_score(res, Benchmark("A", "a", "relaxed", 100.0))
    with pytest.raises(ValueError, match="not a percentage"):
        benchmark_score({**res, "results": {"a": {"acc,none": 55.0}}},
                        Benchmark("A", "a", "acc", 100.0))
    with pytest.raises(ValueError, match="no result for task c"):
        benchmark_score(res, Benchmark("C", "c", "acc"))


def test_checkpoint_pixels_follow_the_saved_processor(tmp_path):
    from vade.eval.runner import checkpoint_pixels

    (tmp_path / "preprocessor_config.json").write_text(
        json.dumps({"size": {"shortest_edge": 3136, "longest_edge": 12544}}))
    assert checkpoint_pixels(str(tmp_path)) == {"min_pixels": 3136, "max_pixels": 12544}
    assert checkpoint_pixels("Qwen/Qwen2.5-VL-7B-Instruct") == {}


def test_target_for_base_and_trained_runs():
    t = target_for("tiny-base", "results/x/models/tiny")
    assert (t.model, t.algorithm, t.method, t.seed) == ("tiny", None, "base", None)
    t = target_for("qwen2.5-vl-3b-gspo-dapo-s2", "ck")
    assert (t.model, t.algorithm, t.method, t.seed) == ("qwen2.5-vl-3b", "gspo", "dapo", 2)


@pytest.mark.parametrize("values, key", [
    ({"repeats": 0}, "evaluate.repeats"),
    ({"repeats": 4, "temperature": 0}, "evaluate.temperature"),
    ({"kind": "cluster"}, "evaluate.kind"),
    ({"kind": "paper", "benchmarks": [{"name": "X", "task": "t"}]},
     "evaluate.benchmarks[0].metric"),
    ({"benchmarks": [{"name": "X", "task": "t", "metric": "m"}]}, "evaluate.benchmarks"),
    ({"judge": {"mode": "external"}}, "evaluate.judge.url"),
    ({"model_args": {"device": "cuda"}}, "evaluate.model_args.device"),
    ({"top_p": 0}, "evaluate.top_p"),
    ({"typo": 1}, "evaluate.typo"),
])
def test_evaluate_config_errors_name_the_key(values, key):
    with pytest.raises(ValueError, match=key.replace("[", r"\[").replace("]", r"\]")):
        EvaluateConfig.from_dict(values)


def test_evaluate_config_defaults_are_the_papers_five_benchmarks():
    cfg = EvaluateConfig.from_dict({})
    assert [b.name for b in cfg.benchmarks] == ["MathVista", "MathVerse", "MathVision",
                                                "ScienceQA", "ChartQA"]
    assert cfg.repeats == 4 and cfg.judge == JudgeConfig()


def test_local_task_hooks_on_a_verl_row():
    from vade.eval.local_task import doc_to_target, doc_to_text, doc_to_visual

    row = _row(2)
    assert doc_to_text(row) == "What is 2+1? Answer in \\boxed{}."
    assert doc_to_target(row) == "3"
    (img,) = doc_to_visual(row)
    assert img.size == (56, 56) and img.mode == "RGB"
    bad = {**row, "images": [{"bytes": b"not an image", "path": None}]}
    with pytest.raises(ValueError, match="row index=1002"):
        doc_to_visual(bad)


def test_reasoning_variant_takes_the_last_boxed_answer():
    import importlib.util

    from vade.eval.taskgen import SHIPPED_TASKS

    spec = importlib.util.spec_from_file_location("ru", SHIPPED_TASKS / "reasoning_utils.py")
    ru = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ru)
    doc = {"type": "human_test", "answer": "12"}
    got = ru.chartqa_reasoning_process_results(doc, ["so 11.9 \\boxed{12}"])
    assert got["relaxed_overall"] == 1
    assert ru.chartqa_reasoning_process_results(doc, ["\\boxed{15}"])["relaxed_overall"] == 0


# ---------------------------------------------------------------- end to end on CPU


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny") / "model"
    build_tiny_qwen(out)
    return out


def test_evaluate_runs_lmms_eval_k_times_and_stores_rows(tiny_model, tmp_path, monkeypatch):
    import duckdb

    import vade.rewards
    from vade.cli import main

    data = tmp_path / "data"
    write_eval_set(data / "eval" / "math.parquet")
    seen: list[tuple[str, str, int]] = []

    real_score = vade.rewards.compute_score

    def spy(data_source, solution_str, ground_truth, extra_info=None, **kw):
        # the real reward, recorded: which response was scored against which gold (a nonzero
        # score through the real reward: test_eval_repeats.py)
        seen.append((solution_str, ground_truth, extra_info["index"]))
        return real_score(data_source, solution_str, ground_truth, extra_info, **kw)

    monkeypatch.setattr(vade.rewards, "compute_score", spy)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", fresh_store(tmp_path / "mlflow.db"))
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "evaltest")
    out = tmp_path / "eval" / "tiny-grpo-vade-s0.duckdb"
    cfg = '{"name": "t", "evaluate": {"repeats": 2, "seed": 5, "max_new_tokens": 6}}'
    rc = main(["evaluate", "--config-json", cfg, "--run-id", "tiny-grpo-vade-s0",
               "--checkpoint", str(tiny_model), "--data-dir", str(data), "--out", str(out)])
    assert rc == 0
    con = duckdb.connect(str(out), read_only=True)
    rows = con.execute("SELECT run_id, model, algorithm, method, seed, benchmark, repeat, "
                       "seed_eval, score, n, task FROM eval_results ORDER BY repeat").fetchall()
    # each repeat's score is the real reward's mean over that repeat's responses, in percent
    expected = [100.0 * sum(real_score("synthetic/math", sol, gt, {"answer_type": "number"})["acc"]
                            for sol, gt, _ in seen[r * N_ROWS:(r + 1) * N_ROWS]) / N_ROWS
                for r in (0, 1)]
    assert rows == [("tiny-grpo-vade-s0", "tiny", "grpo", "vade", 0, "math", r, 5 + r,
                     expected[r], 4, "vade_math") for r in (0, 1)]
    assert con.execute("SELECT k, score FROM eval_average").fetchone() == (2, sum(expected) / 2)
    # every row scored once per repeat, with its own ground truth
    assert sorted((gt, idx) for _, gt, idx in seen) == sorted(
        [(str(i + 1), 1000 + i) for i in range(N_ROWS)] * 2)
    # sampling with different seeds: the two repeats did not generate identical responses
    by_rep = [[s for s, _, idx in seen[r * N_ROWS:(r + 1) * N_ROWS]] for r in (0, 1)]
    assert by_rep[0] != by_rep[1]
    # MLflow: the run named after the run id holds per-repeat scores and the average@k
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.get_experiment_by_name("evaltest")
    (run,) = client.search_runs([exp.experiment_id])
    assert run.info.run_name == "tiny-grpo-vade-s0"
    assert run.data.metrics["eval/math/average_at_2"] == pytest.approx(sum(expected) / 2)
    hist = client.get_metric_history(run.info.run_id, "eval/math/score")
    assert sorted(m.step for m in hist) == [0, 1]
    # a base model's evaluation is a run of its own, with what was evaluated as params and tags
    # (and, run by hand, it sets torch's threads as Snakemake's OMP_NUM_THREADS=1 would)
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        base_cfg = '{"name": "t", "evaluate": {"repeats": 1, "seed": 5, "max_new_tokens": 6}}'
        assert main(["evaluate", "--config-json", base_cfg, "--run-id", "tiny-base",
                     "--checkpoint", str(tiny_model), "--data-dir", str(data),
                     "--out", str(tmp_path / "eval" / "tiny-base.duckdb")]) == 0
        assert torch.get_num_threads() == 1  # evaluate.threads' default
    finally:
        torch.set_num_threads(threads)
    (base,) = client.search_runs([exp.experiment_id], "attributes.run_name = 'tiny-base'")
    assert base.data.params["evaluate.repeats"] == "1"
    assert base.data.params["checkpoint"] == str(tiny_model)
    assert base.data.tags["kind"] == "base-model" and base.data.tags["model"] == "tiny"
    assert base.info.status == "FINISHED"


def test_evaluate_refuses_bad_inputs(tmp_path, capsys):
    from vade.cli import main

    rc = main(["evaluate", "--config-json", '{"evaluate": {}}', "--run-id", "tiny-ppo-x-s0",
               "--checkpoint", str(tmp_path), "--data-dir", str(tmp_path), "--out",
               str(tmp_path / "o.duckdb")])
    assert rc == 2 and "run id" in capsys.readouterr().err
    rc = main(["evaluate", "--config-json", '{"evaluate": {}}', "--run-id", "tiny-base",
               "--checkpoint", str(tmp_path), "--data-dir", str(tmp_path), "--out",
               str(tmp_path / "o.duckdb")])
    assert rc == 2 and "no held-out sets" in capsys.readouterr().err
    cfg = json.dumps({"evaluate": {"kind": "paper", "benchmarks": [
        {"name": "MV", "task": "mathvista_testmini_cot", "metric": "m", "judge": True}]}})
    rc = main(["evaluate", "--config-json", cfg, "--run-id", "tiny-base", "--checkpoint",
               str(tmp_path), "--out", str(tmp_path / "o.duckdb")])
    assert rc == 2 and "need the LLM judge" in capsys.readouterr().err
    assert not (tmp_path / "o.duckdb").exists()


def test_paper_benchmarks_resolve_to_lmms_eval_tasks_and_shipped_variants():
    from lmms_eval.tasks import TaskManager
    from lmms_eval.utils import load_yaml_config

    from vade.eval.config import PAPER_BENCHMARKS
    from vade.eval.taskgen import SHIPPED_TASKS

    manager = TaskManager("WARNING", include_path=[str(SHIPPED_TASKS)], model_name="qwen2_5_vl")
    for bench in PAPER_BENCHMARKS:
        for task in bench.tasks:  # its own and its companions' (MathVerse's CoT)
            assert task in manager.all_tasks, task
    for path in sorted(SHIPPED_TASKS.glob("*.yaml")):
        cfg = load_yaml_config(str(path), mode="full")  # resolves every !function
        assert cfg["generation_kwargs"]["max_new_tokens"] >= 1024, path.name
        hook = cfg["process_results"]
        assert hook.__module__ in ("reasoning_utils", "judged_utils"), path.name
        kwargs = cfg.get("lmms_eval_specific_kwargs", {}).get("default", {})
        if "query_type" in kwargs:  # MathVerse: its official query, verbatim (no box asked)
            assert kwargs["query_type"] in ("query_wo", "query_cot") and \
                kwargs["post_prompt"] == "", path.name
            continue
        post = kwargs.get("post_prompt") or hook.__globals__["POST_PROMPT"]
        assert "boxed" in post, path.name
