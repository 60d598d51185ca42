"""``VLLMEngine``: the same ``generate`` interface on GPU with vLLM (paper scale).

vLLM is not part of the CPU environment, so it is imported when the engine is built and a
missing install is a clear error, not an ImportError deep in a traceback. Prompts are rendered
with the checkpoint's own chat template (the processor's ``apply_chat_template``) and images go
in ``multi_modal_data``, the documented offline multimodal input of ``vllm.LLM.generate``. One
request per example with ``SamplingParams(n=G, seed=...)`` keeps the G responses grouped; each
request's seed comes from (call seed, the example's sample id), so a response does not depend on
which engine of a data-parallel job (``vade.rollout.parallel``) drew it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from vade.models.policy import _decode_images, chat_messages
from vade.models.rollouts import Rollouts

if TYPE_CHECKING:  # pragma: no cover
    from vade.data.records import Example

__all__ = ["VLLMEngine", "request_seed", "require_vllm"]


def require_vllm() -> Any:
    """The vllm module, or one clear error naming the alternative."""
    try:
        import vllm  # lazy: vLLM: the GPU envs only
    except ImportError as exc:
        raise RuntimeError(
            "difficulty.engine 'vllm' needs the vllm package, which is not installed in this "
            "environment (it needs a GPU); install the train-verl environment or use "
            f"engine 'hf' on CPU ({exc})") from None
    return vllm


def request_seed(seed: int, sample_id: int) -> int:
    """One request's sampling seed: a function of the call's seed and the sample alone."""
    return int(np.random.SeedSequence([int(seed), int(sample_id)]).generate_state(1)[0])


class VLLMEngine:
    """GPU generation with ``vllm.LLM``; ``llm_kwargs`` go to ``vllm.LLM`` unchanged."""

    def __init__(self, model_path: str, *, max_images_per_prompt: int = 1,
                 gpu_memory_utilization: float = 0.85, dtype: str = "bfloat16",
                 **llm_kwargs: Any) -> None:
        vllm = require_vllm()
        from transformers import AutoProcessor  # lazy: the cpu extra, seconds to load

        self.model_path = str(model_path)
        self.processor = AutoProcessor.from_pretrained(self.model_path)
        self.llm = vllm.LLM(model=self.model_path, dtype=dtype,
                            gpu_memory_utilization=gpu_memory_utilization,
                            limit_mm_per_prompt={"image": max_images_per_prompt}, **llm_kwargs)

    def _request(self, example: Example) -> dict[str, Any]:
        prompt = self.processor.apply_chat_template(chat_messages(example.messages),
                                                    tokenize=False, add_generation_prompt=True)
        images = _decode_images(example)
        request: dict[str, Any] = {"prompt": prompt}
        if images:
            request["multi_modal_data"] = {"image": images if len(images) > 1 else images[0]}
        return request

    def generate(self, examples: Sequence[Example], n: int, *, temperature: float = 1.0,
                 max_new_tokens: int = 16, seed: int = 0, progress: Any = None) -> Rollouts:
        from vllm import SamplingParams  # lazy: vLLM: the GPU envs only

        if n < 1:
            raise ValueError(f"VLLMEngine.generate: n must be >= 1, got {n}")
        params = [SamplingParams(n=n, temperature=float(temperature), top_k=-1, top_p=1.0,
                                 max_tokens=max_new_tokens, seed=request_seed(seed, ex.index))
                  for ex in examples]
        outputs = self.llm.generate([self._request(ex) for ex in examples], params)
        texts = [c.text for o in outputs for c in o.outputs]
        if progress is not None:
            progress.update(len(examples))
        return Rollouts(example_pos=np.repeat(np.arange(len(examples), dtype=np.int64), n),
                        texts=texts, n=n)

    def close(self) -> None:
        """Stop vLLM's engine-core process now. Left to vLLM's own cleanup (a finalizer run at
        interpreter exit), it never stops inside a ``vade.rollout.parallel`` engine process:
        multiprocessing ends a child with ``os._exit`` after joining the child's own non-daemon
        children, so no finalizer runs and the engine process waited on its engine core
        forever (seen with vLLM 0.12 on CPU after the job was killed)."""
        llm, self.llm = self.llm, None
        if llm is not None:
            llm.llm_engine.engine_core.shutdown()
