"""`loss_positions: trained` (train/loss_positions.py) against TRL's own loss (`all`).

On a tiny random Llama with LoRA, prefix-shared rows of several samples each: the loss, the LoRA
gradients and the logged metrics computed from the trained positions' logits equal those of TRL
1.16's fused LM head over every position, with one row per batch, with packed rows two to a batch
(padding), and over an accumulated step (`num_items_in_batch`). In float64 the tolerance is 1e-6
(relative) because TRL's kernel folds every logit tile in float32 (`tile.float()`), whatever the
model's dtype: its rounding, not ours, sets it; our own path matches the model's full float64
logits to 1e-12. In float32 both sides round logits of magnitude ~10 at ~1e-6, and summing and
backpropagating over a few hundred tokens leaves differences of ~1e-6: the bounds below (loss 2e-6,
gradients 1e-5 relative) are ten times the largest seen. Then through train/sft.py: the recipe key
reaches the trainer, and a run with gradient accumulation logs the same losses and ends with the
same adapter either way.
"""

from __future__ import annotations

import functools
import json

import pytest
import torch
from _repo import ROOT

from diaforge.train.prefix_shared import (
    PrefixSharedCollator,
    build_prefix_shared,
    prefix_shared_trainer_class,
)
from diaforge.train.slicing import IGNORE_INDEX, SliceConfig, TurnSlicer, to_dataset

TINY = str(ROOT / "recipes" / "tiny" / "sft.yaml")


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, dialogues):
    """(model path, tokenizer, samples) of a tiny random Llama whose tokenizer knows the dialogues."""
    from transformers import AutoTokenizer

    from diaforge.train.modeling import build_tiny_model
    from diaforge.train.slicing import dialogue_texts

    path = build_tiny_model(tmp_path_factory.mktemp("tiny") / "base", texts=dialogue_texts(dialogues), seed=0)
    tokenizer = AutoTokenizer.from_pretrained(path)
    samples, _ = TurnSlicer(tokenizer, SliceConfig.of(history_reasoning="strip")).slice_all(dialogues)
    return path, tokenizer, samples


def make_trainer(path, tokenizer, rows, dtype, tmp_path):
    """A prefix-shared trainer on a LoRA model with non-zero A and B (both get gradients)."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM
    from trl import SFTConfig

    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, attn_implementation="sdpa")
    torch.manual_seed(0)
    config = LoraConfig(
        r=4, lora_alpha=8, lora_dropout=0.0, target_modules="all-linear", init_lora_weights=False
    )
    args = SFTConfig(
        output_dir=str(tmp_path), use_cpu=True, report_to="none", bf16=False, max_length=None,
        remove_unused_columns=False, dataset_kwargs={"skip_prepare_dataset": True},
    )  # fmt: skip
    collator = PrefixSharedCollator(tokenizer.pad_token_id, dtype=dtype)
    trainer = prefix_shared_trainer_class("trained")(
        model=get_peft_model(model, config), args=args, train_dataset=to_dataset(rows),
        processing_class=tokenizer, data_collator=collator,
    )  # fmt: skip
    trainer.model.train()
    return trainer, collator


def predictable(trainer, batch):
    """The batch with every other trained label replaced by the model's own first choice, so that
    the token accuracy is about one half (a random model's is zero, which would test nothing)."""
    with torch.no_grad():
        top = trainer.model(**{k: v for k, v in batch.items() if k != "labels"}).logits.argmax(-1)
    labels = batch["labels"].clone()
    row, p = (labels[:, 1:] != IGNORE_INDEX).nonzero()[::2].unbind(-1)
    labels[row, p + 1] = top[row, p]
    return {**batch, "labels": labels}


def step(trainer, batches, loss_positions, accumulate):
    """Losses of the micro-batches, the LoRA gradients of their sum and the logged metrics."""
    trainer.loss_positions = loss_positions
    trainer.model.zero_grad()
    trainer._metrics["train"].clear()
    trainer._total_train_tokens = 0
    total = sum(int((b["labels"][:, 1:] != IGNORE_INDEX).sum()) for b in batches)
    losses = []
    for batch in batches:
        loss = trainer.compute_loss(
            trainer.model, dict(batch), num_items_in_batch=total if accumulate else None
        )
        loss.backward()
        losses.append(loss.item())
    grads = {n: p.grad.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}
    return losses, grads, {k: list(v) for k, v in trainer._metrics["train"].items()}


@pytest.mark.slow(reason="trains a tiny model")
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize(
    ("packing", "batch_size", "accumulate"),
    [(False, 1, False), (True, 2, False), (False, 1, True), (True, 2, True)],
)
def test_trained_positions_equal_trl_loss(
    tiny, tmp_path, dtype, packing, batch_size, accumulate, monkeypatch
):
    path, tokenizer, samples = tiny
    rows, _ = build_prefix_shared(samples, max_length=2048 if packing else None, packing=packing)
    rows = rows[: 2 * batch_size]  # two micro-batches
    assert all(len({k for k in r["sample_index"] if k >= 0}) >= 2 for r in rows)  # several samples a row
    if packing:
        assert any(len(r["dialogue_ids"]) >= 2 for r in rows)
        assert len({len(r["input_ids"]) for r in rows[:batch_size]}) > 1  # rows of a batch are padded
    trainer, collate = make_trainer(path, tokenizer, rows, dtype, tmp_path)
    batches = [
        predictable(trainer, collate(rows[i : i + batch_size])) for i in range(0, len(rows), batch_size)
    ]

    kept = []
    base = trainer.model.get_base_model()
    forward = base.forward  # TRL's fused-head forward, patched on the instance

    @functools.wraps(forward)
    def spy(*args, **kwargs):
        kept.append(kwargs.get("logits_to_keep", 0))
        return forward(*args, **kwargs)

    monkeypatch.setattr(base, "forward", spy)
    want, want_grads, want_metrics = step(trainer, batches, "all", accumulate)
    assert all(not torch.is_tensor(k) for k in kept)  # TRL's path: every position
    kept.clear()
    got, got_grads, got_metrics = step(trainer, batches, "trained", accumulate)
    assert len(kept) == len(batches) and all(torch.is_tensor(k) for k in kept)
    assert sum(k.numel() for k in kept) < 0.6 * sum(b["input_ids"].shape[1] for b in batches)
    assert trainer._positions_refused is None

    loss_tol, grad_tol = 1e-6, 5e-6
    for a, b in zip(got, want, strict=True):
        assert abs(a - b) <= loss_tol * abs(b), (got, want)
    if accumulate:
        assert sum(want) > 1.0  # the step's mean: the micro-batches' losses add up to it
    assert set(got_grads) == set(want_grads) and want_grads
    for name, g in want_grads.items():
        rel = ((got_grads[name] - g).norm() / g.norm()).item()
        assert g.norm() > 0 and rel <= grad_tol, (name, rel)
    assert got_metrics["num_tokens"] == want_metrics["num_tokens"]
    assert (
        max(abs(a - b) for a, b in zip(got_metrics["entropy"], want_metrics["entropy"], strict=True)) < 1e-5
    )
    accuracy = zip(got_metrics["mean_token_accuracy"], want_metrics["mean_token_accuracy"], strict=True)
    assert max(abs(a - b) for a, b in accuracy) <= (0 if dtype == torch.float64 else 1e-2)


def test_trained_positions_equal_full_float64_logits(tiny, tmp_path):
    """Our path against the model's own full logits, both in float64: equal to 1e-12."""
    from diaforge.train.loss_positions import token_log_probs

    path, tokenizer, samples = tiny
    rows, _ = build_prefix_shared(samples, max_length=1024, packing=True)
    trainer, collate = make_trainer(path, tokenizer, rows, torch.float64, tmp_path)
    batch = collate(rows[:2])
    with torch.no_grad():
        got = trainer.compute_loss(trainer.model, dict(batch)).item()
        logits = trainer.model(**{k: v for k, v in batch.items() if k != "labels"}).logits
    log_probs, _, mask = token_log_probs(logits[:, :-1], batch["labels"][:, 1:])
    want = (-log_probs.sum() / mask.sum()).item()
    assert abs(got - want) <= 1e-12 * want, (got, want)


@pytest.mark.parametrize("model_kind", ["no_argument", "ignores_it"])
def test_model_without_logits_to_keep_falls_back_once(tiny, tmp_path, caplog, model_kind):
    """A forward without a `logits_to_keep` argument (found from its signature), or one that takes
    it and returns every position's logits (found from their shape on the first batch): TRL's loss,
    one warning."""
    path, tokenizer, samples = tiny
    rows, _ = build_prefix_shared(samples)
    trainer, collate = make_trainer(path, tokenizer, rows, torch.float32, tmp_path)
    base = trainer.model.get_base_model()
    forward = base.forward

    def no_argument(*args, **kwargs):
        kwargs.pop("logits_to_keep", None)
        return forward(*args, **kwargs)

    def ignores_it(*args, logits_to_keep=0, **kwargs):
        return forward(*args, **kwargs)

    base.forward = no_argument if model_kind == "no_argument" else ignores_it
    trainer.loss_positions = "all"
    want = trainer.compute_loss(trainer.model, dict(collate(rows[:1]))).item()
    trainer.loss_positions = "trained"
    with caplog.at_level("WARNING", logger="diaforge.sft"):
        got = [trainer.compute_loss(trainer.model, dict(collate(rows[:1]))).item() for _ in range(2)]
    assert got == [want, want] and trainer._positions_refused
    assert ("takes no logits_to_keep" in trainer._positions_refused) == (model_kind == "no_argument")
    assert sum("loss_positions: trained is not used" in r.getMessage() for r in caplog.records) == 1


def test_trl_path_where_its_head_is_compact(tiny, tmp_path, monkeypatch, caplog):
    """Where TRL's fused head runs its Triton kernel (CUDA, XPU) it already scores only the trained
    positions: `trained` leaves TRL's path in place, without a warning. On a CPU it does not."""
    from diaforge.train import loss_positions

    assert not loss_positions.trl_scores_trained_only(torch.device("cpu"))
    path, tokenizer, samples = tiny
    rows, _ = build_prefix_shared(samples)
    trainer, collate = make_trainer(path, tokenizer, rows, torch.float32, tmp_path)
    monkeypatch.setattr(loss_positions, "trl_scores_trained_only", lambda device: True)
    monkeypatch.setattr(type(trainer), "_trained_positions_loss", lambda *a: pytest.fail("not TRL's path"))
    with caplog.at_level("INFO", logger="diaforge.sft"):
        loss = trainer.compute_loss(trainer.model, dict(collate(rows[:1])))
    assert torch.isfinite(loss) and trainer._positions_refused == loss_positions.TRL_COMPACT
    assert not [r for r in caplog.records if r.levelname == "WARNING"]


# ------------------------------------------------------------------------------------------
# Through train/sft.py
# ------------------------------------------------------------------------------------------


def test_recipe_key_reaches_the_trainer(tmp_path, monkeypatch, capsys):
    from diaforge.train import sft
    from diaforge.train.config import parse_recipe
    from diaforge.train.loss_positions import TrainedPositionsLoss

    recipe = tmp_path / "recipe.yaml"
    recipe.write_text((ROOT / "recipes" / "tiny" / "sft.yaml").read_text() + "loss_positions: all\n")
    assert parse_recipe([str(recipe)])[0].loss_positions == "all"
    assert parse_recipe([TINY])[0].loss_positions == "trained"  # the default
    assert sft.main([TINY, "--loss_positions", "some", "--output_dir", str(tmp_path / "o")]) == 2
    assert "invalid choice: 'some'" in capsys.readouterr().err

    calls = []
    original = TrainedPositionsLoss._trained_positions_loss

    def recording(self, *args, **kwargs):
        calls.append(type(self).__name__)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(TrainedPositionsLoss, "_trained_positions_loss", recording)
    common = ["--max_steps", "2", "--save_strategy", "no", "--slicing", "prefix_shared"]
    sft.run([str(recipe), "--output_dir", str(tmp_path / "all"), *common])
    assert calls == []
    sft.run([str(recipe), "--output_dir", str(tmp_path / "trained"), *common, "--loss_positions", "trained"])
    assert calls == ["PrefixSharedSFTTrainer"] * 2


@pytest.mark.slow(reason="trains a tiny model")
@pytest.mark.parametrize("slicing", ["prefix_shared", "naive"])
def test_accumulated_training_is_the_same(tmp_path, slicing):
    """Four optimizer steps of two micro-batches (two rows each for naive slicing, padded): the
    same logged losses, accuracies and token counts, and the same adapter, either way."""
    from safetensors.torch import load_file

    from diaforge.train import sft

    runs = {}
    for positions in ("all", "trained"):
        out = tmp_path / positions
        sft.run(
            [TINY, "--output_dir", str(out), "--slicing", slicing, "--loss_positions", positions,
             "--max_steps", "4", "--gradient_accumulation_steps", "2", "--logging_steps", "1",
             "--save_strategy", "no", "--per_device_train_batch_size", "1" if slicing == "prefix_shared" else "2"]
        )  # fmt: skip
        logs = [h for h in json.loads((out / "trainer_state.json").read_text())["log_history"] if "loss" in h]
        runs[positions] = (logs, load_file(out / "adapter_model.safetensors"))
    (want, want_adapter), (got, got_adapter) = runs["all"], runs["trained"]
    assert len(want) == len(got) == 4
    for a, b in zip(got, want, strict=True):
        assert abs(a["loss"] - b["loss"]) <= 1e-5 * b["loss"], (a, b)
        assert abs(a["entropy"] - b["entropy"]) <= 1e-4 and a["num_tokens"] == b["num_tokens"]
        assert abs(a["mean_token_accuracy"] - b["mean_token_accuracy"]) <= 1e-2
    for name, w in want_adapter.items():
        # Adam moves a weight whose gradient is near zero by up to the learning rate (1e-2) a step
        # whatever that gradient's rounding: 5e-4 is five times the largest difference seen.
        assert (got_adapter[name] - w).abs().max() <= 5e-4, name


# ------------------------------------------------------------------------------------------
# The focal factor (recipe key focal_gamma)
# ------------------------------------------------------------------------------------------


def test_focal_weights_by_hand():
    """(1 - p)^gamma of each token, detached: p = 0.5, 0.9, 1 with gamma 2 give 0.25, 0.01, 0."""
    from diaforge.train.loss_positions import focal_weights

    log_probs = torch.log(torch.tensor([0.5, 0.9, 1.0], dtype=torch.float64, requires_grad=True))
    weights = focal_weights(log_probs, 2.0)
    assert torch.allclose(weights, torch.tensor([0.25, 0.01, 0.0], dtype=torch.float64), atol=1e-12)
    assert not weights.requires_grad


@pytest.mark.parametrize("gamma", [0.0, 1.0, 2.0])
def test_focal_loss_equals_full_float64_logits(tiny, tmp_path, gamma):
    """With focal_gamma the loss is the sum of -log p (1 - p)^gamma over the label tokens divided by
    their number, from the model's full float64 logits (gamma 0: the plain loss); its gradient
    is that of the weighted sum with the weights held fixed."""
    from diaforge.train.loss_positions import token_log_probs

    path, tokenizer, samples = tiny
    rows, _ = build_prefix_shared(samples, max_length=1024, packing=True)
    trainer, collate = make_trainer(path, tokenizer, rows, torch.float64, tmp_path)
    trainer.focal_gamma = gamma
    batch = collate(rows[:2])
    params = [p for p in trainer.model.parameters() if p.requires_grad]
    got = trainer.compute_loss(trainer.model, dict(batch))
    got_grads = torch.autograd.grad(got, params)
    logits = trainer.model(**{k: v for k, v in batch.items() if k != "labels"}).logits
    log_probs, _, mask = token_log_probs(logits[:, :-1], batch["labels"][:, 1:])
    weights = (1 - log_probs.detach().exp()) ** gamma
    want = -(log_probs * weights).sum() / mask.sum()
    want_grads = torch.autograd.grad(want, params)
    assert abs(got.item() - want.item()) <= 1e-12 * want.item(), (got.item(), want.item())
    for g, w in zip(got_grads, want_grads, strict=True):
        assert torch.allclose(g, w, rtol=1e-9, atol=1e-12)
    if gamma:  # the factor changes the loss: tokens predicted with p > 0 weigh less than 1
        plain = (-log_probs.sum() / mask.sum()).item()
        assert got.item() < plain


def test_focal_gamma_needs_the_trained_positions(tmp_path, capsys):
    """A recipe with focal_gamma and loss_positions: all is refused before a model is built, as is
    a negative gamma; on the TRL path a trainer with the factor set refuses to compute the loss."""
    from diaforge.train import sft
    from diaforge.train.loss_positions import positions_trainer_class

    out = tmp_path / "o"
    assert sft.main([TINY, "--focal_gamma", "2", "--loss_positions", "all", "--output_dir", str(out)]) == 2
    assert "focal_gamma needs loss_positions: trained" in capsys.readouterr().err
    assert sft.main([TINY, "--focal_gamma", "-1", "--output_dir", str(out)]) == 2
    assert "focal_gamma must be a number >= 0" in capsys.readouterr().err
    with pytest.raises(ValueError, match="focal_gamma must be >= 0"):
        positions_trainer_class("trained", base=object, focal_gamma=-0.5)


def test_focal_gamma_reaches_the_trainer(tmp_path, monkeypatch):
    """The recipe key sets the factor on the trainer that train/sft.py builds."""
    from diaforge.train import sft
    from diaforge.train.loss_positions import TrainedPositionsLoss

    seen = []
    original = TrainedPositionsLoss._trained_positions_loss

    def recording(self, *args, **kwargs):
        seen.append(self.focal_gamma)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(TrainedPositionsLoss, "_trained_positions_loss", recording)
    common = ["--max_steps", "1", "--save_strategy", "no", "--slicing", "prefix_shared"]
    sft.run([TINY, "--output_dir", str(tmp_path / "f"), *common, "--focal_gamma", "1.5"])
    assert seen == [1.5]


def test_a_fully_fine_tuned_model_is_saved_with_its_kv_cache_on(tmp_path):
    """The Trainer sets `use_cache: false` in the model's config for training; the saved model must
    not keep it (generation without a cache is several times slower), and eval loads older
    checkpoints with it on."""
    from diaforge.eval.models import load_hf_model
    from diaforge.train import sft

    out = tmp_path / "full"
    sft.run(
        [TINY, "--output_dir", str(out), "--use_peft", "false", "--max_steps", "1", "--save_strategy", "no"]
    )
    assert json.loads((out / "config.json").read_text())["use_cache"] is True
    config = json.loads((out / "config.json").read_text())
    (out / "config.json").write_text(json.dumps({**config, "use_cache": False}))
    model, _, _ = load_hf_model(out)
    assert model.config.use_cache is True
