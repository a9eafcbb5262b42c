"""The bundled accelerate configs (one process on CPU up to multi-node DeepSpeed).

A package only so that its files ship as package data: `diaforge train --config_file cpu` and
`diaforge demo` find them through `diaforge.packaged.packaged_path`, from any folder. From a
checkout they are plain files too: `accelerate launch --config_file accelerate_configs/cpu.yaml`.
"""
