"""The training recipes, one folder per backbone (README.md here has the table), and their metadata
in registry.yaml (base models, shapes, accelerate configs, memory; `diaforge.train.recipe_registry`).

A package only so that its YAML files ship as package data: `diaforge.packaged.packaged_path`
finds them wherever the project is installed (`diaforge demo` reads smollm2-135m/demo.yaml).
From a checkout they are plain files too: `accelerate launch train/sft.py recipes/tiny/sft.yaml`.
"""
