"""Prefix-shared turn slicing (train/prefix_shared.py) against naive turn slicing.

The layout: following a sample's chain of parents gives back its naive tokens, labels and
positions exactly. The numbers: on a tiny random Llama with LoRA in fp32, the per-sample loss of
the combined rows equals the naive samples' within 1e-5 and the LoRA gradients within 1e-4
(relative), with earlier thoughts stripped and kept, one dialogue per row or several packed in a
row, with batch padding. Then training through train/sft.py with `--slicing prefix_shared`.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import statistics

import pytest
import torch
from _repo import ROOT
from _train_support import DIALOGUES

from diaforge.train.prefix_shared import (
    GroupBuilder,
    PrefixSharedCollator,
    allowed_matrix,
    build_prefix_shared,
    pack_rows,
    real_tokens,
)
from diaforge.train.slicing import IGNORE_INDEX, SliceConfig, SlicingError, TurnSlicer

TINY = str(ROOT / "recipes" / "tiny" / "sft.yaml")


@pytest.fixture(autouse=True)
def one_thread():
    """A tiny model runs fastest on one thread (and far slower with two on a busy machine)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """A few dialogues from the scripted generator (tool calls, more varied turn counts)."""
    from diaforge.data_gen.engine import generate
    from diaforge.data_gen.gen_config import GenerationConfig
    from diaforge.schema import load_dialogues

    out = tmp_path_factory.mktemp("corpus")
    cfg = GenerationConfig(
        catalogue=str(ROOT / "data_gen" / "assets" / "catalogue_train.json"),
        out=str(out),
        num_dialogues=4,
        seed=3,
        progress=False,
        plots=False,
        export=False,
        encoder="tfidf",
    )
    asyncio.run(generate(cfg))
    return load_dialogues(out / "dialogues.jsonl")


@pytest.fixture(scope="module")
def corpus(dialogues, generated):
    return [*dialogues, *generated]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, corpus):
    """(model path, tokenizer) of a tiny random Llama whose tokenizer knows the corpus."""
    from transformers import AutoTokenizer

    from diaforge.train.modeling import build_tiny_model
    from diaforge.train.slicing import dialogue_texts

    path = build_tiny_model(tmp_path_factory.mktemp("tiny") / "base", texts=dialogue_texts(corpus), seed=0)
    return path, AutoTokenizer.from_pretrained(path)


def slice_corpus(tokenizer, dialogues, history, **kw):
    samples, _ = TurnSlicer(tokenizer, SliceConfig.of(history_reasoning=history, **kw)).slice_all(dialogues)
    return samples


# ------------------------------------------------------------------------------------------
# Layout
# ------------------------------------------------------------------------------------------


def chains(row):
    """For every sample of a row: the combined indices of its tokens, from its last token up the
    parents (the view its last token attends to)."""
    last = {}
    for j, k in enumerate(row["sample_index"]):
        if k >= 0:
            last[k] = j
    out = {}
    for k, j in last.items():
        path = []
        while j >= 0:
            path.append(j)
            j = row["attn_parent"][j]
        out[k] = path[::-1]
    return out


def check_layout(rows, samples):
    seen = set()
    for row in rows:
        n = len(row["input_ids"])
        assert all(len(row[c]) == n for c in ("labels", "position_ids", "attn_parent", "sample_index"))
        for k, path in chains(row).items():
            sample = samples[k]
            # The sample's view is exactly its naive tokens, labels and positions.
            assert [row["input_ids"][j] for j in path] == sample["input_ids"], k
            assert [row["position_ids"][j] for j in path] == list(range(len(sample["input_ids"]))), k
            own = [row["labels"][j] if row["sample_index"][j] == k else IGNORE_INDEX for j in path]
            assert own == sample["labels"], k
            # Its labels sit right after the token that predicts them in the naive sample.
            for a, b in zip(path, path[1:], strict=False):
                if row["sample_index"][b] == k:
                    assert a == b - 1, k
            seen.add(k)
    assert seen == set(range(len(samples)))


@pytest.mark.parametrize("history", ["strip", "keep"])
@pytest.mark.parametrize("template", ["chatml", "llama3", "gemma"])
def test_each_sample_is_reproduced_exactly_with_fewer_tokens(tokenizer_for, corpus, history, template):
    tokenizer = tokenizer_for("tiny", template)
    samples = slice_corpus(tokenizer, corpus, history)
    rows, stats = build_prefix_shared(samples)
    check_layout(rows, samples)
    assert stats.rows == stats.dialogues == len(corpus)
    naive = sum(len(s["input_ids"]) for s in samples)
    assert stats.naive_tokens == naive and stats.shared_tokens == sum(len(r["input_ids"]) for r in rows)
    assert stats.shared_tokens < 0.6 * naive, stats.summary()
    for row in rows:  # each dialogue's row is shorter than its samples together
        assert len(row["input_ids"]) < row["naive_tokens"] or row["num_samples"] == 1


def test_stripped_thought_is_hidden_and_only_the_public_reply_duplicated(tiny, dialogues):
    """With history stripped, turn k-1's public reply appears twice (with its thought for sample
    k-1, without it for sample k); with history kept, sample k reuses all of sample k-1."""
    _, tokenizer = tiny
    d = next(d for d in dialogues if len(d.assistant_turns()) >= 3)
    for history in ("strip", "keep"):
        samples = slice_corpus(tokenizer, [d], history)
        builder = GroupBuilder()
        appended = [builder.add(s, i) for i, s in enumerate(samples)]
        for k in range(1, len(samples)):
            prev, cur = samples[k - 1], samples[k]
            new = appended[k]
            if history == "keep":
                assert new == len(cur["input_ids"]) - len(prev["input_ids"])
            else:
                # Reused: sample k-1's prompt, not its target (which holds the thought).
                assert new == len(cur["input_ids"]) - prev["num_prompt_tokens"]
                thought = d.turns[d.assistant_turns()[k - 1]].thought
                view = [builder.input_ids[j] for j in chains(builder.row())[k]]
                assert thought and thought not in tokenizer.decode(view)


def test_max_length_splits_groups_and_never_cuts_a_target(tiny, corpus):
    _, tokenizer = tiny
    samples = slice_corpus(tokenizer, corpus, "strip", max_length=1400)
    rows, stats = build_prefix_shared(samples, max_length=1400)
    check_layout(rows, samples)
    assert stats.split_dialogues > 0 and stats.groups > stats.dialogues
    assert max(len(r["input_ids"]) for r in rows) <= 1400
    # The split has no more tokens than cutting a dialogue whenever its next sample does not fit.
    assert stats.shared_tokens <= greedy_tokens(samples, 1400)


def built_length(items):
    group = GroupBuilder()
    for index, sample in items:
        group.add(sample, index)
    return len(group)


def greedy_tokens(samples, max_length):
    total = 0
    for _, items in itertools.groupby(enumerate(samples), key=lambda item: item[1]["dialogue_id"]):
        run = []
        for item in items:
            if run and built_length([*run, item]) > max_length:
                total += built_length(run)
                run = []
            run.append(item)
        total += built_length(run)
    return total


def test_packing_fills_rows_without_attention_across_dialogues(tiny, corpus):
    _, tokenizer = tiny
    samples = slice_corpus(tokenizer, corpus, "strip")
    rows, stats = build_prefix_shared(samples, max_length=4096, packing=True)
    check_layout(rows, samples)
    assert stats.rows < stats.groups and all(len(r["input_ids"]) <= 4096 for r in rows)
    packed = next(r for r in rows if len(r["dialogue_ids"]) >= 2)
    dialogue_of = [None] * len(packed["input_ids"])
    start = 0
    for j, p in enumerate(packed["attn_parent"]):
        if p < 0:
            start = j
        dialogue_of[j] = start  # a row starts where a parent chain starts
    allowed = allowed_matrix(packed["attn_parent"])
    q, k = torch.nonzero(allowed, as_tuple=True)
    assert all(dialogue_of[a] == dialogue_of[b] for a, b in zip(q.tolist(), k.tolist(), strict=True))
    with pytest.raises(SlicingError, match="needs max_length"):
        build_prefix_shared(samples, packing=True)


def test_allowed_matrix_is_the_ancestor_relation():
    parent = [-1, 0, 1, 2, 1, 4, 5, 2, -1, 8]
    allowed = allowed_matrix(parent, 12)
    for i in range(12):
        anc = set()
        j = i if i < len(parent) else -1
        while j >= 0:
            anc.add(j)
            j = parent[j]
        assert {int(x) for x in torch.nonzero(allowed[i]).flatten()} == anc, i
    with pytest.raises(SlicingError):
        allowed_matrix([-1, 1])


def test_collator_pads_and_masks(tiny, dialogues):
    _, tokenizer = tiny
    rows, _ = build_prefix_shared(slice_corpus(tokenizer, dialogues[:3], "strip"))
    batch = PrefixSharedCollator(tokenizer.pad_token_id, pad_to_multiple_of=64, return_sample_index=True)(
        rows
    )
    lengths = [len(r["input_ids"]) for r in rows]
    b, length = batch["input_ids"].shape
    assert b == 3 and length % 64 == 0 and length >= max(lengths)
    assert batch["attention_mask"].shape == (3, 1, length, length)
    assert batch["attention_mask"].dtype == torch.float32
    assert int(real_tokens(batch["attention_mask"])) == sum(lengths)
    for i, n in enumerate(lengths):
        assert (batch["labels"][i, n:] == IGNORE_INDEX).all() and (batch["sample_index"][i, n:] == -1).all()
        assert (batch["input_ids"][i, n:] == tokenizer.pad_token_id).all()
        mask = batch["attention_mask"][i, 0]
        assert (mask[n:] < 0).all() and (mask[:, n:] < 0).all()  # padding sees nothing, is seen by nothing
        assert set(mask[:n, :n].unique().tolist()) <= {0.0, torch.finfo(torch.float32).min}


# ------------------------------------------------------------------------------------------
# Numbers: per-sample loss and LoRA gradients equal to naive slicing
# ------------------------------------------------------------------------------------------


def lora_model(path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="sdpa")
    torch.manual_seed(0)
    # Non-zero B as well as A, so that both get gradients that depend on the whole network.
    config = LoraConfig(
        r=4, lora_alpha=8, lora_dropout=0.0, target_modules="all-linear", init_lora_weights=False
    )
    return get_peft_model(model, config).eval()


def token_losses(logits, labels):
    """Per-token NLL of the causal shift (token t predicted from t-1) and the label mask."""
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    target = labels[:, 1:]
    valid = target != IGNORE_INDEX
    nll = -logp.gather(-1, target.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    return nll * valid, valid


def naive_losses(model, samples):
    """Per-sample mean losses, one sample per forward pass, and the LoRA gradients of their sum."""
    model.zero_grad()
    losses = []
    for s in samples:
        nll, valid = token_losses(
            model(input_ids=torch.tensor([s["input_ids"]])).logits, torch.tensor([s["labels"]])
        )
        loss = nll.sum() / valid.sum()
        loss.backward()
        losses.append(loss.item())
    return losses, lora_grads(model)


def shared_losses(model, rows, n_samples, pad_token_id, batch_size):
    """Per-sample mean losses from combined rows (batches with padding), and the LoRA gradients of
    their sum."""
    model.zero_grad()
    collate = PrefixSharedCollator(pad_token_id, return_sample_index=True)
    sums = torch.zeros(n_samples)
    counts = torch.zeros(n_samples)
    for start in range(0, len(rows), batch_size):
        batch = collate(rows[start : start + batch_size])
        index = batch.pop("sample_index")[:, 1:]
        nll, valid = token_losses(model(**batch).logits, batch["labels"])
        assert (valid == (index >= 0)).all()
        n = torch.zeros(n_samples).index_add_(0, index[valid], torch.ones(int(valid.sum())))
        # The sum of per-sample means: each token weighted by 1 / (its sample's label count).
        counts += n
        weights = torch.zeros_like(nll)
        weights[valid] = 1.0 / n[index[valid]]
        sums += torch.zeros(n_samples).index_add_(0, index[valid], nll[valid].detach())
        (nll * weights).sum().backward()
    return (sums / counts).tolist(), lora_grads(model), counts


def lora_grads(model):
    return {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.requires_grad}


@pytest.mark.slow(reason="loss and LoRA gradients of every sample, two ways")
@pytest.mark.parametrize("history", ["strip", "keep"])
@pytest.mark.parametrize(("packing", "batch_size"), [(False, 3), (True, 2)])
def test_per_sample_loss_and_lora_gradients_equal_naive(tiny, corpus, history, packing, batch_size):
    path, tokenizer = tiny
    samples = slice_corpus(tokenizer, corpus, history)
    rows, stats = build_prefix_shared(samples, max_length=4096 if packing else None, packing=packing)
    if packing:
        assert any(len(r["dialogue_ids"]) >= 2 for r in rows)
    assert len({len(r["input_ids"]) for r in rows[:batch_size]}) > 1  # rows of a batch are padded
    model = lora_model(path)
    want, want_grads = naive_losses(model, samples)
    got, got_grads, counts = shared_losses(model, rows, len(samples), tokenizer.pad_token_id, batch_size)
    assert counts.tolist() == [sum(x != IGNORE_INDEX for x in s["labels"]) for s in samples]
    diff = max(abs(a - b) for a, b in zip(got, want, strict=True))
    assert diff <= 1e-5, diff
    assert all(math.isfinite(x) and x > 1.0 for x in want)
    assert set(got_grads) == set(want_grads) and len(want_grads) > 0
    for name, g in want_grads.items():
        rel = ((got_grads[name] - g).norm() / g.norm()).item()
        assert g.norm() > 0 and rel <= 1e-4, (name, rel)
    assert stats.shared_tokens < stats.naive_tokens


@pytest.mark.slow
def test_flex_attention_block_mask_matches_sdpa(tiny, dialogues):
    """The flex-attention path (meant for GPUs) on CPU, where torch compiles it: same logits."""
    from transformers import AutoModelForCausalLM

    from diaforge.train.prefix_shared import block_mask_from_dense

    path, tokenizer = tiny
    rows, _ = build_prefix_shared(slice_corpus(tokenizer, dialogues[:2], "strip"))
    batch = PrefixSharedCollator(tokenizer.pad_token_id)(rows)
    sdpa = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="sdpa").eval()
    flex = AutoModelForCausalLM.from_pretrained(
        path, dtype=torch.float32, attn_implementation="flex_attention"
    )
    with torch.no_grad():
        want = sdpa(**batch).logits
        got = flex.eval()(
            **{**batch, "attention_mask": block_mask_from_dense(batch["attention_mask"])}
        ).logits
    real = batch["labels"] != IGNORE_INDEX
    assert (got - want)[real].abs().max() < 1e-4


# ------------------------------------------------------------------------------------------
# Training through train/sft.py
# ------------------------------------------------------------------------------------------


@pytest.mark.slow(reason="trains a tiny model")
def test_training_with_prefix_shared_slicing(tmp_path, monkeypatch):
    """`--slicing prefix_shared` on the tiny recipe: the rows reach the model with their 4D mask and
    position ids, the first loss is the naive token mean of the same samples, the num_tokens
    metric counts the real tokens, and the loss falls."""
    import json

    from transformers import AutoModelForCausalLM

    from diaforge.schema import load_dialogues
    from diaforge.train import sft
    from diaforge.train.loss_positions import TrainedPositionsLoss
    from diaforge.train.modeling import load_tokenizer

    seen = []
    original = TrainedPositionsLoss.compute_loss

    def recording(self, model, inputs, *args, **kwargs):
        loss = original(self, model, inputs, *args, **kwargs)
        seen.append(
            {**{k: v.detach().clone() for k, v in inputs.items() if torch.is_tensor(v)}, "loss": loss.item()}
        )
        return loss

    monkeypatch.setattr(TrainedPositionsLoss, "compute_loss", recording)
    out = tmp_path / "run"
    result = sft.run(
        [TINY, "--output_dir", str(out), "--slicing", "prefix_shared", "--max_steps", "10",
         "--logging_steps", "1", "--save_strategy", "no"]
    )  # fmt: skip
    assert result["global_step"] == 10 and len(seen) == 10
    assert result["prefix_shared"]["shared_tokens"] < 0.5 * result["prefix_shared"]["naive_tokens"]
    first = seen[0]
    assert first["attention_mask"].ndim == 4 and first["attention_mask"].dtype == torch.float32
    assert "position_ids" in first and int(first["position_ids"].max()) > first["input_ids"].shape[1] // 2

    # The loss on the first row (LoRA B starts at zero: the base model) is the mean over its
    # trained tokens of the naive samples' per-token losses.
    tokenizer = load_tokenizer(str(out / "tiny-base"))
    samples = slice_corpus(tokenizer, load_dialogues(DIALOGUES), "strip", max_length=2048)
    rows, _ = build_prefix_shared(samples, max_length=2048)
    row = next(r for r in rows if r["input_ids"] == first["input_ids"][0].tolist())
    base = AutoModelForCausalLM.from_pretrained(out / "tiny-base", dtype=torch.float32).eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for k in sorted({k for k in row["sample_index"] if k >= 0}):
            ids, labels = torch.tensor([samples[k]["input_ids"]]), torch.tensor([samples[k]["labels"]])
            nll, valid = token_losses(base(input_ids=ids).logits, labels)
            total += nll.sum().item()
            count += int(valid.sum())
    assert count == sum(x != IGNORE_INDEX for x in row["labels"])
    assert abs(first["loss"] - total / count) < 1e-5, (first["loss"], total / count)

    state = json.loads((out / "trainer_state.json").read_text())
    logs = [h for h in state["log_history"] if "loss" in h]
    losses = [h["loss"] for h in logs]
    assert statistics.fmean(losses[-3:]) < statistics.fmean(losses[:3]) - 0.2, losses
    real = [int(real_tokens(b["attention_mask"])) for b in seen]
    assert [h["num_tokens"] for h in logs] == [sum(real[: i + 1]) for i in range(len(real))]
    assert (out / "adapter_model.safetensors").is_file()
    fingerprint = json.loads((out / "data_fingerprint.json").read_text())
    assert fingerprint["prefix_shared"]["rows"] == 6 and fingerprint["samples"] == 19


def test_recipe_guards(tmp_path, capsys):
    from diaforge.train import sft

    for extra, message in (
        (["--slicing", "trie"], "invalid choice: 'trie'"),
        (
            ["--slicing", "prefix_shared", "--attn_implementation", "flash_attention_2"],
            "needs attn_implementation",
        ),
        (["--slicing", "naive", "--share_listing", "true"], "share_listing needs slicing: prefix_shared"),
    ):
        code = sft.main([TINY, "--output_dir", str(tmp_path / "o"), *extra])
        # transformers announces wandb's offline mode once, when first imported in this process
        err = [e for e in capsys.readouterr().err.strip().splitlines() if "WANDB offline mode" not in e]
        assert code == 2 and len(err) == 1 and message in err[0], err
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text((ROOT / "recipes" / "tiny" / "sft.yaml").read_text() + "slicing: trie\n")
    assert sft.main([str(recipe), "--output_dir", str(tmp_path / "o")]) == 2
    assert "slicing must be one of naive, prefix_shared, got 'trie'" in capsys.readouterr().err


def test_pack_rows_best_fit():
    rows = [{"input_ids": [0] * n, "labels": [-100] * n, "position_ids": list(range(n)),
             "attn_parent": [j - 1 for j in range(n)], "sample_index": [-1] * n,
             "dialogue_ids": [str(n)], "num_samples": 1, "naive_tokens": n} for n in (6, 5, 4, 3, 2)]  # fmt: skip
    packed = pack_rows(rows, 10)
    assert sorted(len(r["input_ids"]) for r in packed) == [10, 10]
    for r in packed:
        assert sum(1 for p in r["attn_parent"] if p < 0) == len(r["dialogue_ids"])


# ------------------------------------------------------------------------------------------
# Shared listings: dialogues over one candidate listing in one row
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def siblings(tmp_path_factory):
    """Six scripted dialogues in two groups of three over one listing each (dialogues_per_listing)."""
    from diaforge.data_gen.engine import generate
    from diaforge.data_gen.gen_config import GenerationConfig
    from diaforge.schema import load_dialogues

    out = tmp_path_factory.mktemp("siblings")
    cfg = GenerationConfig(
        catalogue=str(ROOT / "data_gen" / "assets" / "catalogue_train.json"),
        out=str(out),
        num_dialogues=6,
        seed=2,
        dialogues_per_listing=3,
        reasoning="lookup",
        progress=False,
        plots=False,
        export=False,
        encoder="tfidf",
    )
    asyncio.run(generate(cfg))
    dialogues = load_dialogues(out / "dialogues.jsonl")
    assert len(dialogues) == 6
    return dialogues


@pytest.fixture(scope="module")
def tiny_siblings(tmp_path_factory, siblings):
    from transformers import AutoTokenizer

    from diaforge.train.modeling import build_tiny_model
    from diaforge.train.slicing import dialogue_texts

    path = build_tiny_model(
        tmp_path_factory.mktemp("tiny-sib") / "base", texts=dialogue_texts(siblings), seed=0
    )
    return path, AutoTokenizer.from_pretrained(path)


def sibling_samples(tokenizer, dialogues, history="keep", **kw):
    from diaforge.train.prefix_shared import tag_listings

    samples = slice_corpus(tokenizer, dialogues, history, **kw)
    tag_listings(samples, dialogues)
    return samples


@pytest.mark.parametrize("history", ["strip", "keep"])
def test_shared_listing_holds_the_listing_once_per_row(tiny_siblings, siblings, history):
    from diaforge.train.prefix_shared import listing_key

    _, tokenizer = tiny_siblings
    samples = sibling_samples(tokenizer, siblings, history)
    alone, alone_stats = build_prefix_shared(samples)
    rows, stats = build_prefix_shared(samples, share_listing=True)
    check_layout(rows, samples)  # every sample's view: its own tokens, labels and positions, exactly
    keys = [listing_key(d) for d in siblings]
    assert len(set(keys)) == 2 and stats.families == 2 and stats.rows == 2 and stats.dialogues == 6
    assert alone_stats.families == 6 and alone_stats.rows == 6
    assert stats.naive_tokens == alone_stats.naive_tokens and stats.split_dialogues == 0
    for row in rows:
        assert len(row["dialogue_ids"]) == 3
        assert sum(1 for p in row["attn_parent"] if p < 0) == 1  # one root: the shared prefix
    # Each dialogue after the first of its family reuses the prefix its first sample has in common
    # with the samples before it (capped below its last prompt token); the rest is as when alone.
    saved = 0
    for key in set(keys):
        family = [s for s in samples if s["listing"] == key]
        for d in dict.fromkeys(s["dialogue_id"] for s in family):
            first = next(i for i, s in enumerate(family) if s["dialogue_id"] == d)
            if first == 0:
                continue
            s = family[first]
            limit = s["num_prompt_tokens"] - 1
            best = 0
            for other in family[:first]:
                n = 0
                while n < min(limit, len(other["input_ids"])) and other["input_ids"][n] == s["input_ids"][n]:
                    n += 1
                best = max(best, n)
            saved += best
    assert stats.shared_tokens == alone_stats.shared_tokens - saved
    # What is saved is at least the system prompt with the listing, once per sibling.
    system = tokenizer.apply_chat_template(
        [{"role": "system", "content": "x"}], tokenize=False
    )  # the template's system wrapper alone
    assert saved >= 4 * (len(tokenizer(system, add_special_tokens=False)["input_ids"]) + 100)


def test_shared_listing_split_by_max_length_never_cuts_a_sample(tiny_siblings, siblings):
    _, tokenizer = tiny_siblings
    samples = sibling_samples(tokenizer, siblings)
    whole, _ = build_prefix_shared(samples, share_listing=True)
    limit = max(len(r["input_ids"]) for r in whole) - 1
    rows, stats = build_prefix_shared(samples, max_length=limit, share_listing=True)
    check_layout(rows, samples)
    assert stats.groups > stats.families and max(len(r["input_ids"]) for r in rows) <= limit
    # Without the key (samples of another source), each dialogue stays alone.
    plain = slice_corpus(tokenizer, siblings, "keep")
    _, plain_stats = build_prefix_shared(plain, share_listing=True)
    assert plain_stats.families == plain_stats.rows == 6


@pytest.mark.slow(reason="loss and LoRA gradients of every sample, three ways")
@pytest.mark.parametrize("history", ["strip", "keep"])
def test_shared_listing_loss_equals_one_dialogue_per_row(tiny_siblings, siblings, history):
    """Per-sample loss and LoRA gradients of shared-listing rows (padded in a batch of two, and
    packed) equal those of the same samples one dialogue per row and of naive samples."""
    path, tokenizer = tiny_siblings
    samples = sibling_samples(tokenizer, siblings, history)
    model = lora_model(path)
    want, want_grads = naive_losses(model, samples)
    alone, _ = build_prefix_shared(samples)
    per_row, per_row_grads, _ = shared_losses(model, alone, len(samples), tokenizer.pad_token_id, 1)
    for packing in (False, True):
        rows, _ = build_prefix_shared(
            samples, max_length=8192 if packing else None, packing=packing, share_listing=True
        )
        got, got_grads, counts = shared_losses(model, rows, len(samples), tokenizer.pad_token_id, 2)
        assert counts.tolist() == [sum(x != IGNORE_INDEX for x in s["labels"]) for s in samples]
        for other in (want, per_row):
            diff = max(abs(a - b) for a, b in zip(got, other, strict=True))
            assert diff <= 1e-5, diff
        for name, g in want_grads.items():
            for ref in (g, per_row_grads[name]):
                rel = ((got_grads[name] - ref).norm() / ref.norm()).item()
                assert rel <= 1e-4, (name, rel)
    assert all(math.isfinite(x) and x > 1.0 for x in want)


def test_sft_lays_out_siblings_in_one_row_with_share_listing(tiny_siblings, siblings, tmp_path):
    """train/sft.py's slicing step with ``share_listing: true``: the samples are tagged with their
    listing and each family becomes one training row; the run records it."""
    from diaforge.train import sft
    from diaforge.train.config import parse_recipe
    from diaforge.train.row_layout import row_layout

    _, tokenizer = tiny_siblings
    argv = [
        TINY,
        "--output_dir",
        str(tmp_path / "o"),
        "--slicing",
        "prefix_shared",
        "--share_listing",
        "true",
    ]
    args, training_args, _, _ = parse_recipe([*argv, "--max_length", "8192", "--disable_tqdm", "true"])
    layout = row_layout(args.slicing, share_listing=args.share_listing)
    data = sft.slice_data(args, training_args, tokenizer, layout, siblings, [])
    record = layout.record()["prefix_shared"]
    assert record["share_listing"] is True and record["families"] == 2 and record["rows"] == 2
    assert len(data.train_dataset) == 2 and sorted(len(r) for r in data.train_dataset["dialogue_ids"]) == [
        3,
        3,
    ]
    alone = row_layout("prefix_shared")
    sft.slice_data(args, training_args, tokenizer, alone, siblings, [])
    assert alone.record()["prefix_shared"]["rows"] == 6
