"""VADE on verl 0.7.1: the curriculum-sampler plugin, the override builder, the DAPO entry.

Why verl is pinned to 0.7.1: VADE needs the trainer to ask for each batch *after* the previous
step's rewards are known. verl 0.7.1 is the last release with that hook: ``data.sampler.class_path``
/ ``class_name`` loaded by ``create_rl_sampler`` and ``AbstractCurriculumSampler.update(batch)``
called by ``RayPPOTrainer.fit`` after every step. verl 0.8.0 removed
``verl/experimental/dataset/sampler.py`` and the ``data.sampler`` keys (on 0.9.1 the override
fails at Hydra composition). The rest of the GPU stack follows verl 0.7.1's own pins: vLLM 0.12.0
(its ``vllm`` extra allows 0.8.5-0.12.0; 0.7's images are built on vLLM 0.12), hence torch 2.9.0,
numpy < 2, transformers 4.57 (verl 0.7.1's monkey patches target 4.52-4.57), and flash-attn 2.8.x
built for torch 2.9; verl-recipe's DAPO at commit 8f9e7ac, the one that imports with 0.7.1.

Moving to verl >= 0.8 would need: (1) a new way to choose batches lazily, e.g. a custom
``RayPPOTrainer`` subclass (or the dataset/agent-loop hooks that replaced the sampler) that calls
``VadeSampler.select()`` before generation and ``observe()`` after the reward, since no config key
can inject a sampler anymore; (2) re-checking the row-identity path (``extra_info.index`` in
``non_tensor_batch``), the reward extra-info path (``acc``) and the checkpoint ordering in the new
``fit`` loop; (3) numpy >= 2 and transformers >= 5.5 (verl 0.9.1), which moves the whole
environment (lmms-eval, datasets pins); (4) a verl-recipe commit matching that verl; (5) the
override tests in ``tests/test_verl_overrides.py`` against the new config tree.

Modules: ``sampler`` (the plugin), ``batch`` (verl batch -> per-sample r, G), ``difficulty``
(sample ids, initial posterior), ``persist`` (per-step sampler state files), ``settings`` (the
``data.sampler.vade`` block, read back into ``SamplerConfig``), ``config`` (``train.verl``:
verl's hardware knobs), ``overrides`` (the one mapping from ``TrainConfig`` to Hydra
overrides), ``launch`` (run one cell), ``ppo_entry`` (verl's entry, the sampler observing each
batch before the checkpoint), ``dapo_entry`` (capped DAPO), ``dapo_cap`` (the global generation
budget, counted across resumes), ``rollouts`` (rollouts per step from recorded metrics),
``validation`` (the pooled ``val/acc``), ``recipe`` (the verl-recipe checkout); DIVA-GRPO
(``diva``, ``vade-diva``): ``diva_dataset`` (variant rows from encoded indices, ``data.custom_cls``),
``diva_sampler`` (originals and their variants, levels), ``diva_advantage`` (the ``diva``
advantage, installed by ``ppo_entry``), ``diva_overrides`` (what a DIVA cell changes). Only
``sampler``, ``diva_sampler`` and ``diva_dataset`` import verl at import time (the entries import
verl and the recipe inside ``main``).
"""
