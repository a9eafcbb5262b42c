"""Text and value hygiene at every boundary: files read, replies served, records written.

One bad byte, one lone surrogate, one `1e999` or one absurdly nested value must cost one record
(rejected or repaired, with a reason), never a whole run, and never a traceback.

- `read_text_file`: strict UTF-8 (a BOM is dropped); a bad byte is an `InputError` naming the
  file, the line and the column.
- `find_lone_surrogate` / `repair_text` / `repair_value`: a Python string decoded from JSON may
  hold a lone UTF-16 surrogate (`"\\ud83d"`), which no UTF-8 file or HTTP body can carry.
  `repair_text` keeps valid pairs and replaces each lone half with U+FFFD.
- `json_problem`: why a decoded value cannot be saved as JSON (inf, NaN, nested too deeply, a
  lone surrogate), as `(path, reason)`, or None.
- `load_json` / `load_yaml`: parsers with bounds: depth, size, and for YAML the expanded size of
  aliases (a "billion laughs" document is refused before anything is expanded).
- `sha256_file`: the digest of a file's bytes, which run records use to name their inputs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from diaforge.errors import InputError

#: Deepest nesting accepted in inputs (catalogues, configs, recipes, dialogues, tool arguments).
#: Real tool schemas nest a handful of levels; 64 leaves room and stays far from Python's stack.
MAX_DEPTH = 64
#: Most YAML nodes a document may expand to once its aliases are followed.
MAX_YAML_NODES = 1_000_000
#: Largest text file read whole (configs, recipes, catalogues): 256 MiB.
MAX_FILE_BYTES = 256 * 1024 * 1024

REPLACEMENT = "\ufffd"


# --------------------------------------------------------------------------------------------
# Strings
# --------------------------------------------------------------------------------------------


def find_lone_surrogate(text: str) -> tuple[int, str] | None:
    """(index, code point as ``U+D83D``) of the first lone surrogate in `text`, or None."""
    i, n = 0, len(text)
    while i < n:
        c = ord(text[i])
        if 0xD800 <= c <= 0xDBFF:
            if i + 1 < n and 0xDC00 <= ord(text[i + 1]) <= 0xDFFF:
                i += 2
                continue
            return i, f"U+{c:04X}"
        if 0xDC00 <= c <= 0xDFFF:
            return i, f"U+{c:04X}"
        i += 1
    return None


def is_clean_text(text: str) -> bool:
    """True when `text` encodes to UTF-8 as is (no surrogate code points at all)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def repair_text(text: str) -> tuple[str, int]:
    """`text` with surrogate pairs joined and every lone surrogate replaced by U+FFFD, and the
    count replaced. Clean text comes back unchanged (and is not copied)."""
    if is_clean_text(text):
        return text, 0
    fixed = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return fixed, fixed.count(REPLACEMENT) - text.count(REPLACEMENT)


def repair_value(value: Any) -> tuple[Any, int]:
    """`repair_text` applied to every string (keys included) of a JSON-like value, iteratively
    (any depth). Returns the repaired value and the count of surrogates replaced."""
    total = 0

    def fix(s: str) -> str:
        nonlocal total
        out, n = repair_text(s)
        total += n
        return out

    if isinstance(value, str):
        return fix(value), total
    if not isinstance(value, (dict, list, tuple)):
        return value, 0
    root: list[Any] = [None]
    # (source container, target container, key in the parent target)
    stack: list[tuple[Any, Any]] = []

    def fresh(v: Any) -> Any:
        if isinstance(v, dict):
            t: Any = {}
        elif isinstance(v, (list, tuple)):
            t = []
        else:
            return fix(v) if isinstance(v, str) else v
        stack.append((v, t))
        return t

    root[0] = fresh(value)
    while stack:
        src, dst = stack.pop()
        if isinstance(src, dict):
            for k, v in src.items():
                dst[fix(k) if isinstance(k, str) else k] = fresh(v)
        else:
            dst.extend(fresh(v) for v in src)
    return root[0], total


# --------------------------------------------------------------------------------------------
# Values JSON can hold
# --------------------------------------------------------------------------------------------


def json_problem(value: Any, *, max_depth: int = MAX_DEPTH) -> tuple[str, str] | None:
    """Why `value` cannot be written as strict JSON, as (path, reason), or None when it can.

    Refused: non-finite numbers (inf, NaN: `json` would write `Infinity`, which is not JSON, and
    a YAML/JSON `1e999` decodes to inf), nesting deeper than `max_depth`, lone surrogates.
    Iterative (any depth costs little: it stops descending past `max_depth`)."""
    # Each entry: (value, depth, parent entry index, key in the parent); paths are built only
    # for the node at fault.
    nodes: list[tuple[Any, int, int, Any]] = []
    stack: list[tuple[Any, int, int, Any]] = [(value, 0, -1, None)]

    def where(i: int) -> str:
        parts: list[str] = []
        while i >= 0:
            _, _, parent, key = nodes[i]
            if key is not None:
                parts.append(f"[{key}]" if isinstance(key, int) else f".{key}")
            i = parent
        path = "".join(reversed(parts)).lstrip(".") or "(top level)"
        return path if len(path) <= 80 else f"{path[:40]}...{path[-30:]}"

    while stack:
        entry = stack.pop()
        nodes.append(entry)
        i = len(nodes) - 1
        v, depth = entry[0], entry[1]
        if isinstance(v, str):
            if not is_clean_text(v):
                bad = find_lone_surrogate(v)
                code = bad[1] if bad else "surrogate"
                return where(i), f"invalid Unicode: lone surrogate {code} at character {bad[0] if bad else 0}"
        elif isinstance(v, float):
            if not math.isfinite(v):
                return where(i), f"{v} is not a finite number (JSON holds only finite numbers)"
        elif isinstance(v, dict):
            if depth >= max_depth and v:
                return where(i), f"nested deeper than {max_depth} levels"
            for k, child in v.items():
                if isinstance(k, str) and not is_clean_text(k):
                    return where(i), "invalid Unicode (a lone surrogate) in a key"
                stack.append((child, depth + 1, i, k))
        elif isinstance(v, (list, tuple)):
            if depth >= max_depth and v:
                return where(i), f"nested deeper than {max_depth} levels"
            for j, child in enumerate(v):
                stack.append((child, depth + 1, i, j))
    return None


def check_json_value(value: Any, *, path: str | Path | None = None, record: int | str | None = None) -> None:
    """`InputError` naming the file, record and field when `json_problem(value)` finds one."""
    problem = json_problem(value)
    if problem is not None:
        raise InputError(problem[1], path=path, record=record, field=problem[0])


# --------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------


def decode_utf8(data: bytes, *, path: str | Path | None = None) -> str:
    """Strict UTF-8 (a leading BOM dropped); a bad byte is an `InputError` with its line and
    column (the column counts bytes from the start of the line, from 1)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        start = exc.start
        line = data.count(b"\n", 0, start) + 1
        col = start - (data.rfind(b"\n", 0, start) + 1) + 1
        raise InputError(
            f"not UTF-8 text: byte 0x{data[start]:02x} at column {col} ({exc.reason})",
            path=path,
            record=line,
        ) from None


def read_text_file(path: str | Path, *, what: str = "file", max_bytes: int = MAX_FILE_BYTES) -> str:
    """A whole text file as strict UTF-8, with every failure an `InputError` naming the file."""
    p = Path(path)
    check_regular_file(p, what=what, max_bytes=max_bytes)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the {what}: {exc.strerror or exc}", path=p) from None
    if len(data) > max_bytes:  # it grew since it was measured
        raise InputError(f"{what} is over {max_bytes} bytes, the limit", path=p)
    return decode_utf8(data, path=p)


def check_regular_file(path: str | Path, *, what: str = "file", max_bytes: int = MAX_FILE_BYTES) -> int:
    """The size of `path` in bytes, after checking, before a byte is read, that it is a regular
    file (a device such as /dev/zero, a FIFO or a socket never ends) of at most `max_bytes`;
    otherwise an `InputError` naming the file."""
    p = Path(path)
    try:
        info = p.stat()
    except FileNotFoundError:
        raise InputError(f"{what} not found", path=p) from None
    except OSError as exc:
        raise InputError(f"cannot read the {what}: {exc.strerror or exc}", path=p) from None
    if stat.S_ISDIR(info.st_mode):
        raise InputError(f"is a directory, expected a {what}", path=p)
    if not stat.S_ISREG(info.st_mode):
        raise InputError(f"is not a regular file (a device, pipe or socket), expected a {what}", path=p)
    if info.st_size > max_bytes:
        raise InputError(
            f"{what} is {info.st_size:,} bytes, over the limit of {max_bytes:,}; split it into smaller files",
            path=p,
        )
    return info.st_size


# --------------------------------------------------------------------------------------------
# Bounded parsers
# --------------------------------------------------------------------------------------------


def load_json(text: str, *, path: str | Path | None = None, record: int | None = None, **kwargs: Any) -> Any:
    """`json.loads` that never raises RecursionError and refuses what strict JSON cannot hold
    (`NaN`, `Infinity`, `1e999`, nesting past `MAX_DEPTH`, lone surrogates) with an `InputError`.
    A syntax error stays a `json.JSONDecodeError` (callers word those themselves)."""
    try:
        value = json.loads(text, **kwargs)
    except RecursionError:
        raise InputError(f"nested deeper than {MAX_DEPTH} levels", path=path, record=record) from None
    check_json_value(value, path=path, record=record)
    return value


def _yaml_loader() -> type:
    import yaml

    class BoundedSafeLoader(yaml.SafeLoader):
        """SafeLoader whose documents are measured (expanded size, depth) before construction."""

    return BoundedSafeLoader


def _node_checks(node: Any, *, max_nodes: int, max_depth: int) -> str | None:
    """Why a composed YAML node graph is refused (recursive alias, too many nodes once aliases are
    expanded, too deep), or None. Linear in the graph's size: expanded sizes are memoised."""
    import yaml

    size: dict[int, int] = {}
    depth_of: dict[int, int] = {}
    on_path: set[int] = set()
    # Iterative post-order walk.
    stack: list[tuple[Any, bool]] = [(node, False)]
    while stack:
        n, done = stack.pop()
        key = id(n)
        if done:
            on_path.discard(key)
            if isinstance(n, yaml.MappingNode):
                children = [c for pair in n.value for c in pair]
            elif isinstance(n, yaml.SequenceNode):
                children = list(n.value)
            else:
                children = []
            size[key] = 1 + sum(size[id(c)] for c in children)
            depth_of[key] = 1 + max((depth_of[id(c)] for c in children), default=0)
            if size[key] > max_nodes:
                return f"the YAML expands to more than {max_nodes} values (an alias bomb?)"
            if depth_of[key] > max_depth + 1:
                return f"the YAML nests deeper than {max_depth} levels"
            continue
        if key in size:
            continue
        if key in on_path:
            return "the YAML holds a recursive alias"
        on_path.add(key)
        stack.append((n, True))
        if isinstance(n, yaml.MappingNode):
            children = [c for pair in n.value for c in pair]
        elif isinstance(n, yaml.SequenceNode):
            children = list(n.value)
        else:
            children = []
        if len(stack) > 4 * max_nodes:
            return f"the YAML expands to more than {max_nodes} values (an alias bomb?)"
        for c in children:
            if id(c) in on_path:
                return "the YAML holds a recursive alias"
            if id(c) not in size:
                stack.append((c, False))
    return None


def _duplicate_key(node: Any) -> tuple[str, int, int] | None:
    """The first key set twice in one YAML mapping, as (dotted key, its line, the line of the first
    one), or None. PyYAML keeps the last silently; a recipe or config that sets `learning_rate`
    twice is a mistake either way. Merge keys (`<<`) are YAML's own and not counted."""
    import yaml

    seen: set[int] = set()
    stack: list[tuple[str, Any]] = [("", node)]
    while stack:
        where, n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if isinstance(n, yaml.MappingNode):
            first: dict[str, int] = {}
            for key_node, value_node in n.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                    key = key_node.value
                    line = key_node.start_mark.line + 1
                    dotted = f"{where}.{key}" if where else key
                    if key in first:
                        return dotted, line, first[key]
                    first[key] = line
                    stack.append((dotted, value_node))
                else:
                    stack.append((where, value_node))
        elif isinstance(n, yaml.SequenceNode):
            stack += [(where, v) for v in n.value]
    return None


def load_yaml(
    text: str,
    *,
    path: str | Path | None = None,
    max_nodes: int = MAX_YAML_NODES,
    max_depth: int = MAX_DEPTH,
) -> Any:
    """`yaml.safe_load` with bounds. The document is composed first (linear in its text), its
    expanded size and depth measured with aliases followed (memoised, so an alias bomb costs as
    little as its text), and only then constructed. Refused with an `InputError`: more than
    `max_nodes` values once expanded, deeper than `max_depth`, recursive aliases, and non-finite
    numbers (`.inf`, `.nan`, `1e999`). A syntax error stays a `yaml.YAMLError`."""
    loader = _yaml_loader()(text)
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:
            raise InputError(f"the YAML nests deeper than {max_depth} levels", path=path) from None
        if node is None:
            return None
        why = _node_checks(node, max_nodes=max_nodes, max_depth=max_depth)
        if why is not None:
            raise InputError(why, path=path)
        duplicate = _duplicate_key(node)
        if duplicate is not None:
            key, line, first = duplicate
            raise InputError(
                f"duplicate key {key!r} (first set on line {first}); YAML would keep only the last, "
                "so remove one of them",
                path=path,
                record=line,
                field=key,
            )
        value = loader.construct_document(node)
    finally:
        loader.dispose()
    problem = json_problem(value, max_depth=max_depth)
    if problem is not None:
        raise InputError(problem[1], path=path, field=problem[0])
    return value


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB blocks (provenance of datasets and catalogues)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# --------------------------------------------------------------------------------------------
# Output folders
# --------------------------------------------------------------------------------------------


def output_path_problem(value: object) -> str | None:
    """Why `value`, given as a file or folder to write, names none: an empty or blank text (``""``
    would be the working folder, ``"  "`` a folder named by spaces); None when it names one (or is
    not a text). Every output flag (`diaforge.cliargs.output_path`), config key
    (`diaforge.configs.check_output_path`) and recipe key (``output_dir``) is refused by it."""
    if not isinstance(value, str) or value.strip():
        return None
    return f"must name a file or folder to write, got {'only white space' if value else repr(value)}"


def check_output_dir(path: str | Path, *, field: str | None = None, what: str = "output folder") -> Path:
    """Check, before any work starts, that `path` is a folder this process can write in, or one
    it can create; leaves nothing behind (folders made for the check are removed again). Every
    failure is an `InputError` naming the folder and `field` (the flag or key that set it); an
    empty or blank `path` is one (`output_path_problem`)."""
    problem = output_path_problem(path)
    if problem is not None:
        raise InputError(problem, field=field)
    p = Path(path).expanduser()
    created: list[Path] = []
    try:
        if p.exists() and not p.is_dir():
            raise InputError(
                f"exists and is not a folder; {field or 'it'} names the {what}", path=p, field=field
            )
        missing: list[Path] = []
        q = p
        while not q.exists() and q.parent != q:
            missing.append(q)
            q = q.parent
        if not q.is_dir():
            raise InputError(f"cannot create the {what}: {q} is a file, not a folder", path=p, field=field)
        for folder in reversed(missing):
            try:
                folder.mkdir()
            except FileExistsError:  # made meanwhile by another process (another rank)
                continue
            created.append(folder)
        fd, probe = tempfile.mkstemp(dir=p, prefix=".diaforge-write-check-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(p) else ""
        raise InputError(
            f"cannot create or write the {what}: {exc.strerror or exc}{where}; choose another folder",
            path=p,
            field=field,
        ) from None
    finally:
        for folder in reversed(created):
            with contextlib.suppress(OSError):
                folder.rmdir()
    return p


def check_output_file(path: str | Path, *, field: str | None = None, what: str = "output file") -> Path:
    """`check_output_dir` for the folder of an output file, and that the file itself is not a
    folder; every failure names the file."""
    problem = output_path_problem(path)
    if problem is not None:
        raise InputError(problem, field=field)
    p = Path(path).expanduser()
    if p.is_dir():
        raise InputError(f"is a folder; {field or 'it'} names the {what}", path=p, field=field)
    q = p.parent
    while not q.exists() and q.parent != q:
        q = q.parent
    if q.exists() and not q.is_dir():
        raise InputError(f"cannot create the {what}: {q} is a file, not a folder", path=p, field=field)
    try:
        check_output_dir(p.parent, field=field, what=f"folder of the {what}")
    except InputError as exc:
        raise InputError(f"cannot write the {what}: {exc.message}", path=p, field=field) from None
    return p
