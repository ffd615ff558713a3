"""The table of benchmarks/gpu_check.sh, from the outputs it kept in one folder:

    .venv/bin/python benchmarks/gpu_table.py OUT_FOLDER

A figure a part did not produce (it failed, or timed out) reads "missing", with the file to look at.
"""
from __future__ import annotations

import re
import sqlite3
import statistics
import sys
from pathlib import Path


def find(text: str, pattern: str) -> str | None:
    m = re.search(pattern, text, re.MULTILINE)
    return m.group(1) if m else None


def llm_rows(text: str) -> list[tuple[str, str | None]]:
    train = re.search(r"^training tokens/s\s+([\d.]+) \[[^\]]*\]\s+(?:([\d.]+) \[[^\]]*\]\s+([\d.]+)×)?", text,
                      re.MULTILINE)
    return [("LM step: ours training tokens/s (median)", train.group(1) if train else None),
            ("LM step: TRL training tokens/s (median)", train.group(2) if train and train.group(2) else None),
            ("LM step: ours ÷ TRL", f"{train.group(3)}×" if train and train.group(3) else None),
            ("LM step: line steps ÷ whole completions (time)", find(text, r"line steps ÷ whole completions ([\d.]+×)")),
            ("LM step: peak memory, GiB (ours, TRL)", find(text, r"peak memory \(GiB, both models resident\): (.+)$"))]


def smol_rows(db: Path) -> list[tuple[str, str | None]]:
    if not db.exists():
        return [("llm-smol: iterations done", None)]
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        def values(key: str) -> list[float]:
            return [v for (v,) in con.execute("SELECT value FROM metrics WHERE key = ? ORDER BY iteration", [key])]
        secs, peak, success = values("perf/iteration_s"), values("sys/gpu_peak_mb"), values("policy/success_rate")
    finally:
        con.close()
    return [("llm-smol: iterations done", str(len(secs))),
            ("llm-smol: median s / iteration", f"{statistics.median(secs):.1f}" if secs else None),
            ("llm-smol: peak GPU memory, MB", f"{max(peak):.0f}" if peak else None),
            ("llm-smol: training success, mean", f"{statistics.mean(success):.2f}" if success else None)]


def quickstart_rows(text: str) -> list[tuple[str, str | None]]:
    return [("quickstart on CUDA: whole loop env-steps/s", find(text, r"whole loop .*: ([\d,]+) env-steps/s")),
            ("quickstart on CUDA: rollouts env-steps/s", find(text, r"rollout throughput .*: ([\d,]+) env-steps/s"))]


def main() -> None:
    out = Path(sys.argv[1])
    read = lambda name: (out / name).read_text() if (out / name).exists() else ""  # noqa: E731
    rows = [*llm_rows(read("llm.txt")), *smol_rows(out / "smol.db"), *quickstart_rows(read("quickstart.txt"))]
    width = max(len(name) for name, _ in rows)
    print(f"\n| {'figure':<{width}} | value |\n|{'-' * (width + 2)}|-------|")
    for name, value in rows:
        print(f"| {name:<{width}} | {value if value is not None else f'missing (see {out})'} |")


if __name__ == "__main__":
    main()
