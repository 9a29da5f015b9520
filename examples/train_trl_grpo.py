"""A few GRPO steps with TRL on an envsynth corpus, on CPU, with no download.

The model calls the tasks' tools through TRL's ``environment_factory`` (one envsynth
episode per rollout) and is rewarded with envsynth's score of the database state it leaves.

Without ``--model``, the model is a tiny random-weight Qwen2 built from a config, and its
tokenizer a byte-level BPE trained on the corpus's own prompts, with TRL's Qwen2.5 chat
template (tool calls as ``<tool_call>{...}</tool_call>``): it learns nothing useful, but
every part of a training step runs offline. With ``--model PATH`` (a local checkpoint whose
chat template supports tool calling, e.g. a Qwen2.5/Qwen3 instruct model), the same script
trains it::

    pip install 'envsynth[trl]'
    python examples/train_trl_grpo.py --corpus out/ --steps 2              # builds a small corpus if out/ has none
    python examples/train_trl_grpo.py --corpus out/ --model ~/models/Qwen3-0.6B --steps 50 --tier easy
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]


def ensure_corpus(path: Path) -> Path:
    """``path`` if it holds a corpus, else a small offline corpus built there (one domain, 4 tasks)."""
    from envsynth import catalog
    from envsynth.corpus import build_corpus
    from envsynth.corpus.layout import MANIFEST

    if not (path / MANIFEST).is_file():
        build_corpus(path, blueprints=[catalog.load("harbor_market")], tasks_per_app=4, states=1, distractors=1, seed=0)
    return path


def tiny_tokenizer(texts: list[str], vocab_size: int = 2000) -> Any:
    """A byte-level BPE tokenizer trained on ``texts``, with TRL's Qwen2.5 chat template (tool calling)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen2_5_chat_template

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", padding_side="left")
    fast.chat_template = qwen2_5_chat_template
    return fast


def tiny_model(tokenizer: Any) -> Any:
    """A random-weight Qwen2 causal LM small enough for a CPU step (1 layer, hidden size 32)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.for_model(
        "qwen2",
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=16384,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
    )
    return AutoModelForCausalLM.from_config(config)


def training_texts(dataset: Any) -> list[str]:
    """What the tiny tokenizer is trained on: each row's prompt and tool schemas."""
    import json

    return [m["content"] for row in dataset for m in row["prompt"]] + [json.dumps(t) for row in dataset for t in row["tools"]]


def config(out: Path, steps: int, completion_tokens: int) -> Any:
    """A GRPOConfig for a few CPU steps: 2 prompts of 2 rollouts each, short completions, no saving or reporting."""
    from trl import GRPOConfig

    return GRPOConfig(
        output_dir=str(out),
        max_steps=steps,
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=completion_tokens,
        max_tool_calling_iterations=2,
        learning_rate=1e-4,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        bf16=False,
        seed=0,
    )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Train for ``--steps`` GRPO steps; returns the last logged metrics and the seconds it took."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=Path("out"), help="the corpus folder (a small one is built there if none)")
    parser.add_argument("--model", help="a local model folder (default: a tiny random model built offline)")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--completion-tokens", type=int, default=24)
    parser.add_argument("--tier", action="append", help="keep only tasks of this tier (repeatable)")
    parser.add_argument("--limit", type=int, help="keep the first N tasks")
    parser.add_argument("--out", type=Path, default=Path("grpo-out"))
    args = parser.parse_args(argv)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

    from envsynth.integrations.source import open_source
    from envsynth.integrations.trl_env import environment_factories, make_reward, rl_dataset

    started = time.perf_counter()
    source = open_source(ensure_corpus(args.corpus))
    dataset = rl_dataset(source, tier=args.tier, limit=args.limit)
    if args.model:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer, model = AutoTokenizer.from_pretrained(args.model, padding_side="left"), AutoModelForCausalLM.from_pretrained(args.model)
    else:
        tokenizer = tiny_tokenizer(training_texts(dataset))
        model = tiny_model(tokenizer)
    from trl import GRPOTrainer

    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[make_reward(source)],
        args=config(args.out, args.steps, args.completion_tokens),
        train_dataset=dataset,
        processing_class=tokenizer,
        environment_factory=environment_factories(source, dataset),
    )
    trainer.train()
    logged = [h for h in trainer.state.log_history if "reward" in h]
    result = {"steps": trainer.state.global_step, "last": logged[-1] if logged else {}, "seconds": round(time.perf_counter() - started, 1)}
    print(result)
    return result


if __name__ == "__main__":
    main()
