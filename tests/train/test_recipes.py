"""Every recipe parses against the pinned TRL (no GPU, no download), has its entry in the recipe
registry (recipes/registry.yaml: base model, shape, accelerate config, memory to expect) and keeps
the paper's LoRA settings; every accelerate config loads."""

from __future__ import annotations

import pytest
import yaml
from _repo import ROOT

RECIPES = sorted((ROOT / "recipes").glob("*/*.yaml"))  # one folder per backbone; registry.yaml beside them
ACCELERATE_CONFIGS = sorted((ROOT / "accelerate_configs").rglob("*.yaml"))
BACKBONES = [
    "llama-3.2-3b",
    "gemma-3-4b",
    "gemma-3-12b",
    "gemma-3-27b",
    "llama-3.3-nemotron-super-49b",
    "llama-3.3-70b",
    "smollm2-135m",
    "tiny",
]


GPU_BACKBONES = [b for b in BACKBONES if b not in ("smollm2-135m", "tiny")]


def rel(path):
    return str(path.relative_to(ROOT))


def is_dpo(recipe) -> bool:
    from diaforge.train.config import is_dpo_recipe

    return is_dpo_recipe(recipe)


def test_every_backbone_has_a_recipe():
    folders = {p.parent.name for p in RECIPES}
    assert set(BACKBONES) <= folders
    assert (ROOT / "recipes/tiny/sft.yaml").is_file()
    assert (ROOT / "recipes/smollm2-135m/demo.yaml").is_file()
    assert (ROOT / "recipes/smollm2-135m/full.yaml").is_file()
    assert (ROOT / "recipes/smollm2-135m/curve-gpu.yaml").is_file()
    assert (ROOT / "recipes/tiny/dpo.yaml").is_file()
    for backbone in GPU_BACKBONES:  # each GPU backbone has a DPO stage after its SFT
        assert is_dpo(ROOT / "recipes" / backbone / "dpo.yaml"), backbone


@pytest.mark.parametrize("recipe", RECIPES, ids=rel)
def test_recipe_parses_with_trl(recipe):
    """The raw TRL parser (what `trl sft --config` does) accepts every key and value."""
    import torch
    from trl import DPOConfig, ModelConfig, SFTConfig, TrlParser

    from diaforge.train.dpo_config import DpoArguments
    from diaforge.train.recipe_fields import DiaforgeArguments

    data = yaml.safe_load(recipe.read_text())
    if not torch.cuda.is_available():
        data["use_cpu"] = True  # bf16 recipes are for GPUs; TrainingArguments refuses bf16 without one
    if is_dpo(recipe):
        args, training, model = TrlParser((DpoArguments, DPOConfig, ModelConfig)).parse_dict(data)
        assert args.pairs_path and model.model_name_or_path and training.output_dir
        assert training.precompute_ref_log_probs is True
        return
    args, training, model = TrlParser((DiaforgeArguments, SFTConfig, ModelConfig)).parse_dict(data)
    assert args.dataset_path and model.model_name_or_path and training.output_dir


@pytest.mark.parametrize("recipe", RECIPES, ids=rel)
def test_recipe_parses_as_train_sft_does(recipe):
    from diaforge.train.config import device_defaults, parse_recipe
    from diaforge.train.dpo_config import dpo_device_defaults, parse_dpo_recipe

    if is_dpo(recipe):
        args, training, model, explicit = parse_dpo_recipe(
            [str(recipe)], device_defaults=dpo_device_defaults(False)
        )
        assert {"model_name_or_path", "pairs_path", "beta"} <= explicit
        if recipe.parent.name == "smollm2-135m":  # the demo's SFT is full fine-tuning, so is its DPO
            assert not model.use_peft
        else:
            assert model.use_peft and model.lora_r == 16 and model.lora_alpha == 16
        assert training.lr_scheduler_type.value == "cosine" and training.precompute_ref_log_probs is True
        sft = yaml.safe_load(
            (
                recipe.parent / ("demo.yaml" if recipe.parent.name == "smollm2-135m" else "sft.yaml")
            ).read_text()
        )
        assert model.model_name_or_path == sft["output_dir"]  # starts from that SFT run
        return
    import torch

    argv = [str(recipe)]
    if yaml.safe_load(recipe.read_text()).get("use_cpu") is False and not torch.cuda.is_available():
        argv += ["--use_cpu", "true"]  # a GPU recipe (bf16) here: TrainingArguments refuses bf16 on a CPU
    args, training, model, explicit = parse_recipe(argv, device_defaults=device_defaults(False))
    assert "model_name_or_path" in explicit and "dataset_path" in explicit
    # Every recipe is the paper's LoRA r=16 except the CPU demo, which fully fine-tunes its 135M
    # model at 3e-4 for its one epoch (docs/experiments.md, row 7),
    # and its GPU twin, which carries the demo's curve further.
    kept = recipe.parent.name == "smollm2-135m" and recipe.name in ("demo.yaml", "curve-gpu.yaml")
    if kept:
        assert not model.use_peft and training.learning_rate == pytest.approx(3e-4)
    else:
        assert model.use_peft and model.lora_r == 16 and model.lora_alpha == 16
    assert training.lr_scheduler_type.value == "cosine"
    assert training.per_device_train_batch_size == 1
    # The paper strips earlier thoughts; the CPU demo keeps them, so that the small model copies the
    # chosen tool and its signature from its own earlier turns (docs/experiments.md, the recipe table).
    assert args.prompt_mode in ("prompt", "native") and args.history_reasoning == (
        "keep" if kept else "strip"
    )


#: What the GPU curve's recipe may change of the demo's: precision, device and run management.
CURVE_GPU_CHANGES = {
    "bf16",
    "use_cpu",
    "dataset_path",
    "max_dialogues",
    "output_dir",
    "save_steps",
    "run_name",
    "wandb_tags",
}


def test_the_gpu_curve_recipe_is_the_demo_recipe_with_gpu_precision():
    """curve-gpu.yaml continues the CPU curve: demo.yaml's model, data, slicing, thoughts and
    optimisation key for key; fp32 weights with bf16 autocast, not use_cpu, W&B offline as the demo."""
    folder = ROOT / "recipes" / "smollm2-135m"
    demo = yaml.safe_load((folder / "demo.yaml").read_text())
    gpu = yaml.safe_load((folder / "curve-gpu.yaml").read_text())
    assert set(gpu) == set(demo)
    changed = {key for key in demo if demo[key] != gpu[key]}
    assert changed <= CURVE_GPU_CHANGES, sorted(changed - CURVE_GPU_CHANGES)
    assert gpu["use_cpu"] is False and gpu["bf16"] is True and gpu["dtype"] == "float32"
    assert gpu["use_peft"] is False and gpu["learning_rate"] == pytest.approx(3e-4)
    assert gpu["num_train_epochs"] == 1 and gpu["per_device_train_batch_size"] == 1
    assert gpu["report_to"] == "wandb" and gpu["max_dialogues"] >= 5000
    from diaforge.train.recipe_registry import read_registry

    entry = read_registry().recipe("smollm2-135m/curve-gpu.yaml")
    assert entry.accelerate_config == "accelerate_configs/single_gpu.yaml"
    assert entry.memory_measured is False and entry.planner is None  # an estimate; full fine-tuning


@pytest.mark.parametrize(
    "recipe", [r for r in RECIPES if r.parent.name not in ("tiny", "smollm2-135m")], ids=rel
)
def test_gpu_recipes_follow_the_paper(recipe):
    data = yaml.safe_load(recipe.read_text())
    if is_dpo(recipe):  # DPO after SFT: a preference learning rate, the SFT run's 8-bit base
        assert data["learning_rate"] == pytest.approx(5e-6) and data["beta"] == pytest.approx(0.1)
        assert data["load_in_8bit"] is True and data["precompute_ref_log_probs"] is True
        assert data["model_name_or_path"] == f"outputs/{recipe.parent.name}/sft"
        data["learning_rate"] = 1e-4  # the rest as the SFT recipes
    assert data["learning_rate"] == pytest.approx(1e-4)
    assert data["num_train_epochs"] == 1
    assert data["optim"] == "adamw_torch" and data["lr_scheduler_type"] == "cosine"
    assert data["bf16"] is True and data["gradient_checkpointing"] is True
    assert data["report_to"] == "wandb" and data["wandb_project"] and data["wandb_tags"]
    if recipe.name == "sft.yaml":
        assert data["load_in_8bit"] is True  # the paper's 8-bit base
    assert "/" in data["model_name_or_path"]  # a hub id


def test_every_recipe_has_a_registry_entry_and_every_entry_a_recipe():
    from diaforge.train.recipe_registry import read_registry

    registry = read_registry()
    assert registry.path == ROOT / "recipes" / "registry.yaml"
    assert sorted(e.key for e in registry.recipes()) == sorted(
        rel(r).removeprefix("recipes/") for r in RECIPES
    )
    assert set(registry.backbones) == set(BACKBONES)


@pytest.mark.parametrize("recipe", RECIPES, ids=rel)
def test_registry_entry_of_the_recipe(recipe):
    """Its accelerate config is bundled and loads, its memory to expect is said, its backbone's shape
    is one the planner counts with, an SFT recipe loads its backbone's base model, and the planner
    has a line for it exactly when it is a LoRA recipe for a GPU."""
    from diaforge.configs import read_yaml_mapping
    from diaforge.train.plan import Setup, estimate
    from diaforge.train.recipe_registry import read_registry

    registry = read_registry()
    entry = registry.entry_of(recipe)
    assert entry is not None and entry.key == rel(recipe).removeprefix("recipes/")
    config = entry.accelerate_config_path()
    assert config == ROOT / entry.accelerate_config and config.is_file()
    assert read_yaml_mapping(config)["num_processes"] >= 1
    assert entry.memory.strip()
    backbone = registry.backbone_of(entry)
    assert registry.shape_of_model(backbone.base_model) == backbone.shape
    plan = estimate(Setup(backbone.shape))
    assert plan.total > 0 and all(v >= 0 for v in plan.parts.values())
    data = yaml.safe_load(recipe.read_text())
    if not is_dpo(recipe):
        assert data["model_name_or_path"] == backbone.base_model
    on_gpu = "cpu" not in entry.accelerate_config
    assert (entry.planner is not None) == (on_gpu and data.get("use_peft") is True)
    # The launch command the recipe's comment shows is the one the registry names.
    script = "train/dpo.py" if is_dpo(recipe) else "train/sft.py"
    assert f"--config_file {entry.accelerate_config} {script} {rel(recipe)}" in recipe.read_text()


def test_the_readme_tables_show_the_registry():
    """Every row of recipes/README.md's tables names its recipe's accelerate config, its memory to
    expect (a part of the registry's line) or the planner's peak, as the registry has them."""
    from diaforge.train.recipe_registry import read_registry

    registry = read_registry()
    rows = [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in (ROOT / "recipes" / "README.md").read_text().splitlines()
        if line.startswith("| `")
    ]
    assert {row[0].strip("`") for row in rows} == {e.key for e in registry.recipes()}
    for key, _, config, last in rows:
        entry = registry.recipe(key.strip("`"))
        assert config == f"`{entry.accelerate_config.removeprefix('accelerate_configs/')}`", key
        if entry.name == "dpo.yaml":
            line = entry.planner
            assert last == f"{line.peak_gib} GiB ({line.fits})" if line else last.startswith("none"), key
        else:
            assert last in entry.memory, key


def _registry(tmp_path, text):
    """A registry file in `tmp_path` beside a one-recipe backbone folder."""
    (tmp_path / "tiny").mkdir(exist_ok=True)
    (tmp_path / "tiny" / "sft.yaml").write_text((ROOT / "recipes/tiny/sft.yaml").read_text())
    path = tmp_path / "registry.yaml"
    path.write_text(text)
    return path


GOOD_REGISTRY = """\
backbones:
  tiny:
    base_model: tiny://llama
    shape: {hidden: 64, intermediate: 128, layers: 2, heads: 4, kv_heads: 4, head_dim: 16, vocab: 1024,
            tied: false}
    recipes:
      sft.yaml:
        accelerate_config: accelerate_configs/cpu.yaml
        memory: well under 1 GB of RAM
"""


@pytest.mark.parametrize(
    "old,new,message",
    [
        (
            "accelerate_configs/cpu.yaml",
            "accelerate_configs/nope.yaml",
            r"field 'backbones.tiny.recipes.sft.yaml.accelerate_config': no bundled accelerate config",
        ),
        ("cpu.yaml", "cpu.yml", r"field 'backbones.tiny.recipes.sft.yaml.accelerate_config': must be "),
        (
            "sft.yaml:",
            "other.yaml:",
            r"field 'backbones.tiny.recipes.other.yaml': no recipe file tiny/other.yaml",
        ),
        (
            "        memory: well under 1 GB of RAM\n",
            "",
            r"field 'backbones.tiny.recipes.sft.yaml': missing key 'memory'",
        ),
        ("layers: 2", "layers: two", r"field 'backbones.tiny.shape.layers': must be an integer, got 'two'"),
        (
            "layers: 2",
            "layer: 2",
            r"field 'backbones.tiny.shape': unknown key 'layer'; did you mean 'layers'\?",
        ),
        ("    base_model: tiny://llama\n", "", r"field 'backbones.tiny': missing key 'base_model'"),
        (
            "        memory: well under 1 GB of RAM\n",
            "        memory: m\n        planner: {gpus: 1, sharding: zero4, peak_gib: 1.0, fits: H100}\n",
            r"field 'backbones.tiny.recipes.sft.yaml.planner.sharding': must be one of none, zero2",
        ),
    ],
)
def test_a_bad_registry_entry_is_one_line_naming_the_file_and_the_entry(tmp_path, old, new, message):
    from diaforge.errors import InputError
    from diaforge.train.recipe_registry import read_registry

    assert read_registry(_registry(tmp_path, GOOD_REGISTRY)).recipe("tiny/sft.yaml").memory
    path = _registry(tmp_path, GOOD_REGISTRY.replace(old, new))
    with pytest.raises(InputError, match=message) as caught:
        read_registry(path)
    assert str(caught.value).startswith(f"{path}, field ") and "\n" not in str(caught.value)


def test_nothing_reads_the_recipes_header_comments():
    """The registry holds what code and tests read about a recipe; its comments are prose. No
    source names a header line of theirs (the labels are spelled here so as not to match)."""
    labels = ["Accelerate config:", "Base model:", "GPU memory to expect:", "Memory:", "Planner ("]
    needles = ["# " + label for label in labels] + ["NOT YET " + "RUN ON A GPU"]
    for folder in ("diaforge", "data_gen", "train", "eval", "pipeline", "bench", "scripts", "tests"):
        for path in (ROOT / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            found = [needle for needle in needles if needle in text]
            assert not found, (path.relative_to(ROOT).as_posix(), found)


@pytest.mark.parametrize("config", ACCELERATE_CONFIGS, ids=rel)
def test_accelerate_config_loads(config):
    from accelerate.commands.config.config_args import load_config_from_file

    cluster = load_config_from_file(str(config))
    assert cluster.num_processes >= 1


def test_accelerate_config_set():
    names = {rel(p) for p in ACCELERATE_CONFIGS}
    for name in (
        "cpu",
        "single_gpu",
        "multi_gpu",
        "deepspeed_zero2",
        "deepspeed_zero3",
        "deepspeed_zero3_offload",
        "fsdp2",
    ):
        assert f"accelerate_configs/{name}.yaml" in names
    assert any(n.startswith("accelerate_configs/multi_node/") for n in names)
    assert (ROOT / "accelerate_configs/multi_node/slurm_sft.sh").is_file()


def test_unknown_key_and_bad_values_are_one_line_errors(tmp_path):
    from diaforge.train.config import RecipeError, parse_recipe

    base = (ROOT / "recipes/tiny/sft.yaml").read_text()
    bad = tmp_path / "recipe.yaml"
    bad.write_text(base + "foo: 1\n")
    with pytest.raises(RecipeError, match=r"recipe.yaml: unknown key 'foo'$"):
        parse_recipe([str(bad)])
    with pytest.raises(RecipeError, match=r"unknown option '--bogus_flag'"):
        parse_recipe([str(ROOT / "recipes/tiny/sft.yaml"), "--bogus_flag", "1"])
    bad.write_text(base.replace("prompt_mode: prompt\n", "prompt_mode: chat\n"))
    with pytest.raises(RecipeError, match=r"prompt_mode must be one of prompt, native"):
        parse_recipe([str(bad)])
    bad.write_text("model_name_or_path: [unclosed\n")
    with pytest.raises(RecipeError, match=r"recipe.yaml:\d+: "):
        parse_recipe([str(bad)])
    with pytest.raises(RecipeError, match=r"recipe file not found"):
        parse_recipe([str(tmp_path / "nope.yaml")])
    with pytest.raises(RecipeError, match=r"learning_rate"):
        parse_recipe([str(ROOT / "recipes/tiny/sft.yaml"), "--learning_rate", "fast"])
    bad.write_text(base + "learning_rate: 1.0e-3\n")  # the last of two would win silently
    with pytest.raises(RecipeError, match=r"recipe.yaml, line \d+, field 'learning_rate': duplicate key"):
        parse_recipe([str(bad)])


def test_an_unknown_key_near_a_known_one_says_which(tmp_path):
    from diaforge.train.config import RecipeError, parse_recipe

    bad = tmp_path / "recipe.yaml"
    bad.write_text((ROOT / "recipes/tiny/sft.yaml").read_text() + "lerning_rate: 1.0e-3\n")
    with pytest.raises(RecipeError, match=r"unknown key 'lerning_rate' \(did you mean 'learning_rate'\?\)$"):
        parse_recipe([str(bad)])


def test_a_recipe_is_read_by_one_reader():
    """No code reads a recipe file with its own YAML call: `diaforge.train.config.read_recipe` does
    (in train/plan.py the YAML call left is a command-line value)."""
    readers = {}
    for folder in ("diaforge", "data_gen", "train", "eval", "pipeline", "bench", "scripts"):
        for path in (ROOT / folder).rglob("*.py"):
            hits = [
                ln.strip() for ln in path.read_text(encoding="utf-8").splitlines() if "yaml.safe_load(" in ln
            ]
            if hits:
                readers[path.relative_to(ROOT).as_posix()] = hits
    plan = readers.pop("train/plan.py")
    assert len(plan) == 1 and "safe_load(value)" in plan[0], plan
    assert set(readers) <= {"diaforge/hygiene.py"}, readers  # the bounded loader under read_yaml_mapping


def test_command_line_overrides_the_recipe():
    from diaforge.train.config import device_defaults, parse_recipe

    args, training, model, explicit = parse_recipe(
        [
            str(ROOT / "recipes/tiny/sft.yaml"),
            "--learning_rate",
            "2e-4",
            "--history_reasoning",
            "keep",
            "--lora_r",
            "8",
            "--wandb_tags",
            "a",
            "b",
        ],
        device_defaults=device_defaults(False),
    )
    assert training.learning_rate == pytest.approx(2e-4)
    assert args.history_reasoning == "keep" and model.lora_r == 8 and args.wandb_tags == ["a", "b"]
    assert {"learning_rate", "history_reasoning", "lora_r"} <= explicit
    assert training.bf16 is False and training.use_cpu is True  # CPU defaults under the recipe


def test_resolved_recipe_parses_back(tmp_path):
    from diaforge.train.config import device_defaults, parse_recipe, resolved_recipe

    parsed = parse_recipe([str(ROOT / "recipes/tiny/sft.yaml")], device_defaults=device_defaults(False))
    resolved = resolved_recipe(*parsed[:3])
    path = tmp_path / "recipe_resolved.yaml"
    path.write_text(yaml.safe_dump(resolved, sort_keys=False))
    again = parse_recipe([str(path)], device_defaults=device_defaults(False))
    assert again[0] == parsed[0]
    assert again[2] == parsed[2]
    assert again[1].learning_rate == parsed[1].learning_rate and again[1].max_length == parsed[1].max_length


def test_shared_prompt_is_off_by_default_and_needs_a_dense_mask(tmp_path):
    from diaforge.train.config import RecipeError
    from diaforge.train.dpo_config import check_dpo_recipe, dpo_device_defaults, parse_dpo_recipe

    recipe = str(ROOT / "recipes" / "tiny" / "dpo.yaml")
    args, training, model, _ = parse_dpo_recipe([recipe], device_defaults=dpo_device_defaults(False))
    assert args.shared_prompt is False
    args, training, model, _ = parse_dpo_recipe(
        [recipe, "--shared_prompt", "true", "--attn_implementation", "flash_attention_2"],
        device_defaults=dpo_device_defaults(False),
    )
    assert args.shared_prompt is True
    with pytest.raises(RecipeError, match="shared_prompt: true needs attn_implementation sdpa or eager"):
        check_dpo_recipe(args, training, model, where="dpo.yaml")
