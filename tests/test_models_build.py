"""Building the tiny policy: config validation, tokenizer, determinism, the save/load round trip
through the loaders lmms-eval and verl use, the warm start, and ``vade build-model``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch.set_num_threads(1)

from vade.cli import main
from vade.models.config import WarmStartConfig, model_config_from_section
from vade.models.policy import encode_prompts, load_policy
from vade.models.testing import bar_examples, bar_rows, tiny_policy, write_rows
from vade.models.tokenizer import SPECIAL_TOKENS, train_tokenizer
from vade.models.warmstart import gold_response_prob, warm_start

SMALL = {"hidden_size": 32, "num_layers": 1, "num_heads": 2, "num_kv_heads": 1,
         "intermediate_size": 64, "mrope_section": [2, 3, 3], "vision_hidden_size": 32,
         "vision_depth": 2, "vision_heads": 2, "vision_intermediate_size": 64, "vocab_size": 320}


def test_config_defaults_and_errors_name_the_key():
    cfg = model_config_from_section({"kind": "tiny"})
    assert cfg.tiny.hidden_size == 128 and cfg.tiny.mrope_section == (4, 6, 6)
    assert cfg.warm_start.steps == 600 and cfg.warm_start.batch_size == 32
    with pytest.raises(ValueError, match=r"config key 'model\.tiny\.hiden_size' is unknown"):
        model_config_from_section({"tiny": {"hiden_size": 64}})
    with pytest.raises(ValueError, match=r"config key 'model\.colour' is unknown"):
        model_config_from_section({"colour": 1})
    with pytest.raises(ValueError, match=r"'model\.tiny\.mrope_section' must sum to head_dim/2 = 16"):
        model_config_from_section({"tiny": {"mrope_section": [4, 4, 4]}})
    with pytest.raises(ValueError, match=r"config key 'model\.warm_start\.lr' must be a number "
                                         r"in \[1e-08, 1\], got -1"):
        model_config_from_section({"warm_start": {"lr": -1}})
    with pytest.raises(ValueError, match=r"'model\.name_or_path' is required"):
        model_config_from_section({"kind": "pretrained"})
    with pytest.raises(ValueError, match=r"'model\.kind' must be one of"):
        model_config_from_section({"kind": "huge"})


def test_tokenizer_special_tokens_template_and_determinism():
    corpus = ["Which bar is tallest?", "\\boxed{A}", "\\boxed{B}"] * 3
    tok = train_tokenizer(corpus, vocab_size=512)
    for t in SPECIAL_TOKENS:  # each special token is one id and survives a round trip
        ids = tok(t, add_special_tokens=False)["input_ids"]
        assert len(ids) == 1 and tok.convert_ids_to_tokens(ids) == [t]
    text = "Grüße, 3.5 × 2 = 7 \\boxed{Ω}"  # byte level: anything encodes, nothing is unknown
    assert tok.decode(tok(text)["input_ids"]) == text
    assert len(tok("Which bar is tallest?")["input_ids"]) == 5  # words merged to whole tokens
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>"
    assert tok.get_vocab() == train_tokenizer(corpus, vocab_size=512).get_vocab()


def test_build_is_deterministic_per_seed():
    exs = bar_examples(4, seed=1)
    a, b, c = tiny_policy(exs, seed=0), tiny_policy(exs, seed=0), tiny_policy(exs, seed=1)
    sa, sb, sc = a.model.state_dict(), b.model.state_dict(), c.model.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not all(torch.equal(sa[k], sc[k]) for k in sa)
    assert a.model.config.vision_config.out_hidden_size == a.model.config.text_config.hidden_size


def test_save_pretrained_round_trip_with_hf_loaders(tmp_path):
    from transformers import AutoProcessor, Qwen2_5_VLForConditionalGeneration

    exs = bar_examples(3, seed=2)
    policy = tiny_policy(exs)
    policy.save(tmp_path)
    # What lmms-eval's qwen2_5_vl model and verl call (default AutoProcessor: the fast class).
    model = Qwen2_5_VLForConditionalGeneration.from_pretrained(tmp_path)
    processor = AutoProcessor.from_pretrained(tmp_path, min_pixels=3136, max_pixels=12544)
    assert type(processor).__name__ == "Qwen2_5_VLProcessor"
    a, b = encode_prompts(policy.processor, exs), encode_prompts(processor, exs)
    assert torch.equal(a.input_ids, b.input_ids)
    torch.testing.assert_close(a.pixel_values, b.pixel_values, atol=1e-6, rtol=0)
    with torch.no_grad():
        ref = policy.model(**a.model_kwargs()).logits
        torch.testing.assert_close(model(**a.model_kwargs()).logits, ref)
    loaded = load_policy(tmp_path)
    assert type(loaded.processor.image_processor).__name__ == "Qwen2VLImageProcessor"
    assert loaded.model.generation_config.top_k == 0
    assert loaded.eos_token_ids == [loaded.tokenizer.convert_tokens_to_ids("<|im_end|>"),
                                    loaded.tokenizer.convert_tokens_to_ids("<|endoftext|>")]
    with torch.no_grad():
        torch.testing.assert_close(loaded.model(**a.model_kwargs()).logits, ref)
    with pytest.raises(FileNotFoundError, match="config.json missing"):
        load_policy(tmp_path / "nothing")


def test_warm_start_learns_the_answer_format():
    exs = bar_examples(32, seed=4)
    policy = tiny_policy(exs)
    before = gold_response_prob(policy.model, policy.processor, exs).mean()
    info = warm_start(policy.model, policy.processor, exs,
                      WarmStartConfig(steps=25, lr=1e-2, batch_size=16, warmup_steps=2),
                      seed=0, progress=False)
    after = gold_response_prob(policy.model, policy.processor, exs).mean()
    assert info["steps"] == 25 and info["loss_last"] < 0.5 * info["loss_first"]
    assert after > 20 * before
    assert not policy.model.training


def _run_cli(tmp_path: Path, cfg: dict, *extra: str) -> int:
    return main(["build-model", "--config-json", json.dumps(cfg), "--no-progress",
                 "--out", str(tmp_path / "base"), *extra])


def test_build_model_command_writes_a_loadable_folder(tmp_path, capsys):
    ws = write_rows(tmp_path / "warmstart.parquet", bar_rows(20, seed=6, split="warmstart"))
    cfg = {"seed": 3, "model": {"kind": "tiny", "tiny": SMALL,
                                "warm_start": {"steps": 3, "batch_size": 8, "eval_fraction": 0.2}}}
    assert _run_cli(tmp_path, cfg, "--warmstart", str(ws)) == 0
    out = tmp_path / "base"
    done = json.loads((out / "done.json").read_text())
    assert done["kind"] == "tiny" and done["seed"] == 3 and done["warm_start"]["steps"] == 3
    assert done["heldout_items"] == 4 and sum(done["heldout_pass_at_8_histogram"]) == 4
    assert list(done["heldout_expected_accuracy_by_task"]) == ["synthetic/bars"]
    assert done["parameters"] == sum(p.numel() for p in load_policy(out).model.parameters())
    assert {"config.json", "model.safetensors", "tokenizer.json", "preprocessor_config.json",
            "chat_template.jinja", "generation_config.json"} <= {p.name for p in out.iterdir()}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp folders left
    assert '"parameters"' in capsys.readouterr().out


def test_build_model_command_errors_and_pretrained_pointer(tmp_path, capsys):
    assert _run_cli(tmp_path, {"seed": 0, "model": {"kind": "tiny", "tiny": {"bogus": 1}}},
                    "--warmstart", "x.parquet") == 2
    assert "config key 'model.tiny.bogus' is unknown" in capsys.readouterr().err
    assert _run_cli(tmp_path, {"seed": 0, "model": {"kind": "tiny"}},
                    "--warmstart", str(tmp_path / "missing.parquet")) == 2
    assert "parquet file not found" in capsys.readouterr().err
    assert _run_cli(tmp_path, {"seed": 0, "model": {"kind": "pretrained",
                                                    "name_or_path": "not a model"}}) == 2
    assert "neither an existing folder nor a Hugging Face id" in capsys.readouterr().err
    cfg = {"seed": 0, "model": {"kind": "pretrained", "name_or_path": "Qwen/Qwen2.5-VL-3B-Instruct"}}
    assert _run_cli(tmp_path, cfg) == 0
    from vade.models.build import resolve_model_path

    assert resolve_model_path(tmp_path / "base") == "Qwen/Qwen2.5-VL-3B-Instruct"
    assert (tmp_path / "base" / "done.json").is_file()


def test_heldout_accuracy_by_task_groups_rows_by_source():
    """Two tasks, one whose ground truth the model never says: its accuracy is 0, the other's is
    not (the warm start taught the letter format), and the overall accuracy is the row-weighted
    mean of the two."""
    from vade.data.records import example_from_row
    from vade.models.build import heldout_metrics

    train = bar_examples(64, seed=5)
    policy = tiny_policy(train)
    warm_start(policy.model, policy.processor, train,
               WarmStartConfig(steps=25, lr=1e-2, batch_size=16, warmup_steps=2),
               seed=0, progress=False)
    rows = bar_rows(12, seed=4)
    for r in rows[:4]:
        r["data_source"] = "synthetic/never"
        r["reward_model"]["ground_truth"] = "Z"
    m = heldout_metrics(policy.model, policy.processor, [example_from_row(r) for r in rows],
                        seed=0, n=8)
    by_task = m["heldout_expected_accuracy_by_task"]
    assert sorted(by_task) == ["synthetic/bars", "synthetic/never"]
    assert by_task["synthetic/never"] == 0.0 and by_task["synthetic/bars"] > 0.0
    assert m["heldout_expected_accuracy"] == pytest.approx(
        (4 * by_task["synthetic/never"] + 8 * by_task["synthetic/bars"]) / 12)
