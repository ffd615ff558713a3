"""Hostile model folders: each is handed to a real `rla run --preset
llm-tiny` subprocess as policy.model_path (or judge.model_path / env.model_path), and must end it
with exit code 2 and one line on stderr that names the field and the reason: no traceback, no
database created, nothing from the folder run (every builder that could run code plants a
sentinel file that would appear if it did).

    .venv/bin/python benchmarks/fault_models.py

Each folder starts from the tiny-random model (rla_engine/llm/tiny.py, built here, nothing is
downloaded) and is damaged in one way; two cases are GGUF files whose header lies.
"""
from __future__ import annotations

import json
import os
import pickle
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fault_support import ROOT, Verdict, table

SENTINEL = "RAN-FROM-THE-MODEL-FOLDER"
LIMIT_S = 180          # a refusal that takes longer than this is a violation


class Planted:
    """Unpickled, it would create the sentinel file: proof that a pickle ran code."""

    def __init__(self, target: str):
        self.target = target

    def __reduce__(self):
        return (open, (self.target, "w"))


def _config(folder: Path, **changes) -> None:
    doc = json.loads((folder / "config.json").read_text())
    doc.update(changes)
    (folder / "config.json").write_text(json.dumps(doc))


def _pickled_bin(folder: Path, zipped: bool) -> None:
    """Weights as a pickle that would run code: the raw pickle format, or torch.save's zip."""
    (folder / "model.safetensors").unlink()
    payload = {"model.embed_tokens.weight": Planted(str(folder.parent / SENTINEL))}
    if zipped:
        import torch
        torch.save(payload, folder / "pytorch_model.bin")
    else:
        (folder / "pytorch_model.bin").write_bytes(pickle.dumps(payload))


def _remote_code(folder: Path, what: str) -> None:
    """A config or tokenizer that asks for its own Python code, which writes the sentinel."""
    (folder / "planted.py").write_text(f"open({str(folder.parent / SENTINEL)!r}, 'w').close()\n"
                                       "class Planted:\n    pass\n")
    if what == "config":
        _config(folder, model_type="planted", auto_map={"AutoConfig": "planted.Planted",
                                                        "AutoModelForCausalLM": "planted.Planted"})
    else:
        doc = json.loads((folder / "tokenizer_config.json").read_text())
        doc.update(tokenizer_class="Planted", auto_map={"AutoTokenizer": ["planted.Planted", None]})
        (folder / "tokenizer_config.json").write_text(json.dumps(doc))
        (folder / "tokenizer.json").unlink()


def _safetensors_header(folder: Path, length: int) -> None:
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", length) + b'{"a":')


def _escaping_index(folder: Path) -> None:
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {}, "weight_map": {"model.embed_tokens.weight": "../../../../../../etc/passwd"}}))


def _gguf(path: Path, version: int, tensors: int, kvs: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", version, tensors, kvs) + b"\0" * 256)
    return path


# name -> (damage the copy of the tiny folder (or return a file to use instead), the field, words
# the reason must hold)
CASES: dict[str, tuple[Callable[[Path], object], str, list[str]]] = {
    "hidden_size 'abc'": (lambda f: _config(f, hidden_size="abc"), "policy", ["hidden_size", "not a number"]),
    "hidden_size -8": (lambda f: _config(f, hidden_size=-8), "policy", ["hidden_size", "at least 1"]),
    "hidden_size 1.5": (lambda f: _config(f, hidden_size=1.5), "judge", ["hidden_size", "whole number"]),
    "num_hidden_layers 1e9": (lambda f: _config(f, num_hidden_layers=10**9), "policy",
                              ["num_hidden_layers", "more than"]),
    "a model bigger than memory": (lambda f: _config(f, hidden_size=10**6, intermediate_size=10**7), "policy",
                                   ["parameters", "memory"]),
    "unknown model_type": (lambda f: _config(f, model_type="no-such-architecture"), "policy", ["config.json"]),
    "weights of other shapes": (lambda f: _config(f, hidden_size=32, num_attention_heads=2, num_key_value_heads=2),
                                "env", ["weights do not fit the model", "model.safetensors"]),
    "pickle that runs code (raw)": (lambda f: _pickled_bin(f, zipped=False), "policy", ["pickled", "weights_only"]),
    "pickle that runs code (zip)": (lambda f: _pickled_bin(f, zipped=True), "judge", ["pickled", "weights_only"]),
    "config with remote code": (lambda f: _remote_code(f, "config"), "policy", ["config.json"]),
    "tokenizer with remote code": (lambda f: _remote_code(f, "tokenizer"), "policy", ["tokenizer"]),
    "tokenizer.json garbage": (lambda f: (f / "tokenizer.json").write_text("{not json"), "policy", ["tokenizer"]),
    "safetensors truncated": (lambda f: (f / "model.safetensors").write_bytes(
        (f / "model.safetensors").read_bytes()[:100]), "policy", ["Safetensor"]),
    "safetensors header 2**60": (lambda f: _safetensors_header(f, 2**60), "policy", ["Safetensor"]),
    "index escaping the folder": (_escaping_index, "policy", ["shard", "not a file name"]),
    "GGUF counts 2**62": (lambda f: _gguf(f.parent / "absurd.gguf", 3, 2**62, 2**62), "policy",
                          ["GGUF header counts", "damaged"]),
    # refused by the gguf reader, or (without the gguf package) for want of it: one line either way
    "GGUF version 99": (lambda f: _gguf(f.parent / "v99.gguf", 99, 1, 1), "policy", ["GGUF"]),
}


def good_folder(root: Path) -> Path:
    """The tiny-random model saved in `root/good` (built once)."""
    folder = root / "good"
    if not (folder / "config.json").is_file():
        from transformers.utils import logging as hf_logging

        from rla_engine.llm.tiny import build_tiny
        hf_logging.disable_progress_bar()
        tmp = Path(tempfile.mkdtemp(dir=root))
        build_tiny(tmp)
        tmp.rename(folder)
    return folder


def make_case(root: Path, name: str) -> tuple[str, Path]:
    """(the config field, the model path) of one hostile case, built under `root/<case>/`."""
    damage, role, _ = CASES[name]
    case = root / "".join(c if c.isalnum() else "-" for c in name)
    shutil.rmtree(case, ignore_errors=True)
    folder = case / "model"
    case.mkdir(parents=True)
    shutil.copytree(good_folder(root), folder)
    made = damage(folder)
    return f"{role}.model_path", made if isinstance(made, Path) else folder


def judge_refusal(verdict: Verdict, name: str, key: str, path: Path, rc: int | None, err: str, took: float,
                  db: Path) -> bool:
    """The guarantees one refusal must keep; True when all held."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    words = CASES[name][2]
    ok = [
        verdict.check("exit code 2", rc == 2, f"{name}: exit {rc}: {err[-300:]}"),
        verdict.check("one line on stderr", len(lines) == 1, f"{name}: {len(lines)} lines: {err[-300:]}"),
        verdict.check("no traceback", "Traceback" not in err, f"{name}: {err[-300:]}"),
        verdict.check("names the field and the path", bool(lines) and key in lines[0] and repr(str(path)) in lines[0],
                      f"{name}: {lines[:1]}"),
        verdict.check("says the reason", bool(lines) and all(w in lines[0] for w in words),
                      f"{name}: wanted {words} in {lines[:1]}"),
        verdict.check("nothing from the folder ran", not (path.parent.parent / SENTINEL).exists()
                      and not (path.parent / SENTINEL).exists(), f"{name}: the sentinel file appeared"),
        verdict.check("no database created", not db.exists(), f"{name}: {db} was created"),
        verdict.check(f"refused within {LIMIT_S} s", took < LIMIT_S, f"{name}: {took:.0f} s"),
    ]
    return all(ok)


def campaign(root: Path, verdict: Verdict, say=print) -> dict:
    root.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "RLA_MODEL_CACHE": str(root / "cache")}
    rows, held = [], 0
    for name in CASES:
        key, path = make_case(root, name)
        db = root / f"{name.replace(' ', '-')}.db"
        start = time.monotonic()
        try:
            res = subprocess.run([sys.executable, "-m", "rla_engine.cli", "run", "--preset", "llm-tiny",
                                  "--set", f"{key}={path}", "--db", str(db)], capture_output=True, text=True,
                                 timeout=LIMIT_S, cwd=ROOT, env=env, errors="replace")
            rc, err = res.returncode, res.stderr
        except subprocess.TimeoutExpired as e:
            rc, err = None, (e.stderr or b"").decode(errors="replace") if isinstance(e.stderr, bytes) else ""
        took = time.monotonic() - start
        good = judge_refusal(verdict, name, key, path, rc, err, took, db)
        held += good
        line = next((ln for ln in err.splitlines() if ln.strip()), "")
        rows.append((name, rc, f"{took:.1f}", "yes" if good else "NO", line[:110]))
        say(f"  {name}: exit {rc} in {took:.1f} s")
    say(table("hostile model folders", rows, ("case", "exit", "s", "held", "stderr")))
    return {"tried": len(CASES), "held": held}


if __name__ == "__main__":
    v = Verdict()
    with tempfile.TemporaryDirectory(prefix="fault-models-") as tmp:
        result = campaign(Path(tmp), v)
    print(f"tried {result['tried']}, held {result['held']}")
    sys.exit(v.report())
