"""A probe for the two-process training tests (tests/train/test_multiprocess.py), loaded by Python
at start-up when this folder is on PYTHONPATH; it does nothing unless DIAFORGE_PROBE_DIR is set.

Each process (the launcher and every rank) records, and writes to DIAFORGE_PROBE_DIR/proc-<pid>.json at
exit, with its ``rank`` (RANK, None outside a distributed launch):
* ``batches``: per training micro-batch, a digest of its input_ids and its trained-token count
  (what the rank read);
* ``writes``: every path it opened for writing, created, renamed or removed, and every file it wrote
  through ``torch.save`` or ``safetensors`` (which write from C++/Rust, outside Python's audit hooks);
* ``log_lines``: the lines it printed that are ours (``[diaforge]``) or the trainer's loss logs;
* ``engine``: accelerate's distributed type, the DeepSpeed ZeRO stage and the model wrapper's class.

The training command itself is the user's (`python -m diaforge.train.launch ...`); nothing here changes
what it computes.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.abc
import importlib.util
import json
import os
import sys

PROBE_DIR = os.environ.get("DIAFORGE_PROBE_DIR")
RECORD: dict = {"rank": os.environ.get("RANK"), "batches": [], "writes": [], "log_lines": [], "engine": None}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_active = True


def _note_write(path) -> None:
    if _active and path is not None and not isinstance(path, int):
        RECORD["writes"].append(os.path.abspath(os.fsdecode(path)))


def _audit(event: str, args: tuple) -> None:
    if not _active:
        return
    if event == "open":
        path, mode, flags = args
        writing = (mode is not None and any(c in mode for c in "wax+")) or (
            mode is None and flags is not None and flags & _WRITE_FLAGS
        )
        if writing:
            _note_write(path)
    elif event in ("os.mkdir", "os.remove", "os.rmdir", "shutil.rmtree", "os.truncate"):
        _note_write(args[0])
    elif event in ("os.rename", "shutil.move", "shutil.copyfile"):
        _note_write(args[1])


class _Tee:
    """sys.stdout / sys.stderr, noting the lines that are ours or the trainer's loss logs."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        for line in str(text).splitlines():
            if "[diaforge]" in line or "'loss':" in line:
                RECORD["log_lines"].append(line.strip())
        return self._stream.write(text)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def _patch_torch(module) -> None:
    save = module.save

    def probed_save(obj, f, *args, **kwargs):
        if isinstance(f, (str, os.PathLike)):
            _note_write(f)
        return save(obj, f, *args, **kwargs)

    module.save = probed_save


def _patch_safetensors(module) -> None:
    save_file = module.save_file

    def probed_save_file(tensors, filename, *args, **kwargs):
        _note_write(filename)
        return save_file(tensors, filename, *args, **kwargs)

    module.save_file = probed_save_file


def _patch_trainer(module) -> None:
    trainer_class = module.Trainer
    training_step = trainer_class.training_step

    def probed_training_step(self, model, inputs, *args, **kwargs):
        ids = inputs["input_ids"].detach().cpu().contiguous()
        labels = inputs.get("labels")
        RECORD["batches"].append(
            {
                "step": self.state.global_step,
                "input_ids": hashlib.sha256(ids.numpy().tobytes()).hexdigest()[:16],
                "tokens": int(ids.numel()),
                "trained": int((labels != -100).sum()) if labels is not None else None,
            }
        )
        if RECORD["engine"] is None:
            plugin = getattr(self.accelerator.state, "deepspeed_plugin", None)
            RECORD["engine"] = {
                "distributed_type": str(self.accelerator.distributed_type),
                "zero_stage": plugin.zero_stage if plugin is not None else None,
                "model_class": type(model).__name__,
                "world_size": self.accelerator.num_processes,
            }
        return training_step(self, model, inputs, *args, **kwargs)

    trainer_class.training_step = probed_training_step


_PATCHES = {
    "torch": _patch_torch,
    "safetensors.torch": _patch_safetensors,
    "transformers.trainer": _patch_trainer,
}


class _PatchAfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Runs a patch right after one of the modules in _PATCHES is first executed."""

    def find_spec(self, name, path=None, target=None):
        if name not in _PATCHES:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return None
        self._loaders = getattr(self, "_loaders", {})
        self._loaders[name] = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec):
        return self._loaders[spec.name].create_module(spec)

    def exec_module(self, module) -> None:
        self._loaders[module.__spec__.name].exec_module(module)
        _PATCHES[module.__spec__.name](module)


def _dump() -> None:
    global _active
    _active = False
    path = os.path.join(PROBE_DIR, f"proc-{os.getpid()}.json")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(RECORD, fh)


if PROBE_DIR:
    sys.addaudithook(_audit)
    sys.stdout = _Tee(sys.stdout)
    sys.stderr = _Tee(sys.stderr)
    sys.meta_path.insert(0, _PatchAfterImport())
    atexit.register(_dump)
