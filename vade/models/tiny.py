"""Build the tiny Qwen2.5-VL policy from scratch: tokenizer, processor and weights, from a seed.

The architecture is transformers' own ``Qwen2_5_VLForConditionalGeneration`` at toy sizes, so the
code paths a real run takes (vision tower, window attention, patch merger, 3-D mrope positions,
chat template, image placeholders) are the ones exercised on CPU; only the numbers are small.

The image processor we build and reload (``load_policy``) is the *slow* ``Qwen2VLImageProcessor``
(PIL + numpy): it does not depend on torchvision, which on some machines is a CUDA build that fails
to import beside a CPU torch (ecosystem.md). transformers 4.57's ``AutoProcessor.from_pretrained``
(what lmms-eval calls) opens the same files as the *fast* torchvision class by default; with this
venv's torch 2.14.1 / torchvision 0.29.1 pair that works and gives pixel values within 2e-7 of the
slow one (checked in tests/test_models.py). ``Qwen2_5_VLProcessor`` insists on a video processor
(torchvision-based) even though no video is ever passed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from vade.data.records import IMAGE_TOKEN
from vade.models.config import TinyArchConfig
from vade.models.tokenizer import CHAT_TEMPLATE, train_tokenizer

if TYPE_CHECKING:  # pragma: no cover
    from transformers import Qwen2_5_VLForConditionalGeneration, Qwen2_5_VLProcessor

__all__ = ["build_model", "build_processor", "build_tiny", "corpus_from_examples"]


def corpus_from_examples(examples: Iterable) -> list[str]:
    """Text the tokenizer is trained on: every prompt (image markers removed) and boxed answer."""
    texts: list[str] = []
    for ex in examples:
        for m in ex.messages:
            texts.append(m["content"].replace(IMAGE_TOKEN, ""))
        texts.append(f"\\boxed{{{ex.ground_truth}}}")
    return texts


def build_processor(corpus: Sequence[str], arch: TinyArchConfig) -> Qwen2_5_VLProcessor:
    """Tokenizer trained on ``corpus`` + slow image processor sized for small images."""
    # lazy: the cpu extra, seconds to load
    from transformers import Qwen2_5_VLProcessor, Qwen2VLImageProcessor
    from transformers.models.qwen2_vl.video_processing_qwen2_vl import Qwen2VLVideoProcessor

    tokenizer = train_tokenizer(corpus, vocab_size=arch.vocab_size,
                                model_max_length=arch.max_position_embeddings)
    image_processor = Qwen2VLImageProcessor(
        patch_size=arch.patch_size, merge_size=arch.spatial_merge_size, temporal_patch_size=2,
        min_pixels=arch.min_pixels, max_pixels=arch.max_pixels,
    )
    # The processor class requires a video processor (torchvision-based); it is never called here.
    video_processor = Qwen2VLVideoProcessor(
        patch_size=arch.patch_size, merge_size=arch.spatial_merge_size, temporal_patch_size=2,
        size={"shortest_edge": arch.min_pixels, "longest_edge": arch.max_pixels},
    )
    return Qwen2_5_VLProcessor(image_processor=image_processor, tokenizer=tokenizer,
                               video_processor=video_processor, chat_template=CHAT_TEMPLATE)


def build_model(arch: TinyArchConfig, tokenizer, seed: int) -> Qwen2_5_VLForConditionalGeneration:
    """Randomly initialised weights; the same seed gives the same tensors bit for bit."""
    # lazy: torch and transformers (the cpu extra) take seconds to load
    import torch
    from transformers import GenerationConfig, Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in
           ("<|endoftext|>", "<|im_end|>", "<|image_pad|>", "<|video_pad|>", "<|vision_start|>",
            "<|vision_end|>")}
    text = {
        "vocab_size": len(tokenizer), "hidden_size": arch.hidden_size,
        "intermediate_size": arch.intermediate_size, "num_hidden_layers": arch.num_layers,
        "num_attention_heads": arch.num_heads, "num_key_value_heads": arch.num_kv_heads,
        "max_position_embeddings": arch.max_position_embeddings, "max_window_layers": arch.num_layers,
        "rope_theta": 10000.0, "tie_word_embeddings": False, "use_sliding_window": False,
        "rope_scaling": {"type": "mrope", "mrope_section": list(arch.mrope_section)},
        "bos_token_id": ids["<|endoftext|>"], "eos_token_id": ids["<|im_end|>"],
        "pad_token_id": ids["<|endoftext|>"],
    }
    vision = {
        "depth": arch.vision_depth, "hidden_size": arch.vision_hidden_size,
        "intermediate_size": arch.vision_intermediate_size, "num_heads": arch.vision_heads,
        "patch_size": arch.patch_size, "spatial_merge_size": arch.spatial_merge_size,
        "temporal_patch_size": 2, "out_hidden_size": arch.hidden_size,
        "window_size": arch.patch_size * arch.spatial_merge_size * 4,
        "fullatt_block_indexes": [arch.vision_depth - 1],
    }
    config = Qwen2_5_VLConfig(
        text_config=text, vision_config=vision, image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"], vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"], **text,
    )
    config._attn_implementation = "sdpa"
    devnull = torch.random.fork_rng(devices=[])
    with devnull:
        torch.manual_seed(seed)
        model = Qwen2_5_VLForConditionalGeneration(config)
    # RL samples from the full distribution: no top-k/top-p truncation by default, so the
    # sampled tokens' log-probs are exactly what ``token_logprobs`` recomputes.
    model.generation_config = GenerationConfig(
        bos_token_id=ids["<|endoftext|>"], pad_token_id=ids["<|endoftext|>"],
        eos_token_id=[ids["<|im_end|>"], ids["<|endoftext|>"]], do_sample=True, temperature=1.0,
        top_k=0, top_p=1.0,
    )
    return model.eval()


def build_tiny(corpus: Sequence[str], arch: TinyArchConfig, seed: int):
    """(model, processor) for a corpus; deterministic for (corpus, arch, seed)."""
    processor = build_processor(corpus, arch)
    model = build_model(arch, processor.tokenizer, seed)
    return model, processor
