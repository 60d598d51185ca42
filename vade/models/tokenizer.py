"""A byte-level BPE tokenizer trained locally, with Qwen2.5-VL's chat special tokens and template.

Why train one: the hub is unreachable here, and a tiny model needs a tiny vocabulary (a few hundred
tokens) so that its embedding does not dwarf the transformer. Byte-level BPE (the Qwen/GPT-2 scheme)
can encode any string, so held-out prompts never produce unknown tokens. The special tokens and the
chat template are Qwen2.5-VL's own, so ``Qwen2_5_VLProcessor``, lmms-eval's ``qwen2_5_vl`` model and
verl's ``RLHFDataset`` treat the tiny model exactly as they treat the real one (image placeholders,
``<|im_end|>`` as end of turn, the default system prompt).

Training is deterministic for a given corpus (the ``tokenizers`` BPE trainer breaks count ties by
pair id, and we feed the corpus in a fixed order).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["CHAT_TEMPLATE", "DEFAULT_SYSTEM_PROMPT", "SPECIAL_TOKENS", "train_tokenizer"]

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant."

# Qwen2.5-VL's added tokens, in Qwen's order (ids follow the byte alphabet in our vocabulary).
SPECIAL_TOKENS = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>",
)

# Qwen2.5-VL-Instruct's chat template (image/video placeholders, default system prompt).
CHAT_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}"
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\n" + DEFAULT_SYSTEM_PROMPT + "<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{% set image_count.value = image_count.value + 1 %}"
    "{% if add_vision_id %}Picture {{ image_count.value }}: {% endif %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' or 'video' in content %}"
    "{% set video_count.value = video_count.value + 1 %}"
    "{% if add_vision_id %}Video {{ video_count.value }}: {% endif %}"
    "<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

# Always in the corpus, so chat scaffolding and answer formatting become single merged tokens.
_BASE_CORPUS = (
    "system\n" + DEFAULT_SYSTEM_PROMPT, "user\n", "assistant\n", "\\boxed{", "}",
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz", "0123456789 . , - + = ( ) ? :",
    "Yes", "No", "The answer is",
)


def train_tokenizer(corpus: Iterable[str], vocab_size: int = 512, model_max_length: int = 4096):
    """A ``Qwen2TokenizerFast`` trained on ``corpus`` (prompts and answers), chat template set.

    ``vocab_size`` is an upper bound: BPE stops merging when no pair occurs twice.
    """
    # lazy: the cpu extra
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import Qwen2TokenizerFast  # lazy: the cpu extra, seconds to load

    tok = Tokenizer(models.BPE(unk_token=None, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=2, show_progress=False,
        special_tokens=[AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    texts = list(_BASE_CORPUS) * 4 + [t for t in corpus if t]
    tok.train_from_iterator(texts, trainer=trainer, length=len(texts))
    fast = Qwen2TokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", bos_token=None,
        unk_token=None, model_max_length=model_max_length, errors="replace",
        clean_up_tokenization_spaces=False,
    )
    fast.add_special_tokens({"additional_special_tokens": list(SPECIAL_TOKENS[1:])},
                            replace_additional_special_tokens=True)
    fast.chat_template = CHAT_TEMPLATE
    fast.padding_side = "left"  # batched generation needs the prompt flush against the response
    return fast
