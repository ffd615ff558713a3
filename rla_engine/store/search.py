"""Search of the run history by name, notes and tags: FTS5 where the index exists, LIKE where it does not."""
from __future__ import annotations

import re
from collections.abc import Iterable

from .base import StoreBase
from .reads import TEXT
from .schema import FTS_COLUMNS

# Control characters and lone surrogates separate words, as the index's tokenizer (unicode61) reads
# them in the text it indexes. Left in a word, a NUL ends FTS5's query string early ("unterminated
# string") and a lone surrogate cannot be encoded for SQLite at all.
_SEPARATORS = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


class SearchMixin(StoreBase):
    def search_runs(self, query: str, include_archived: bool = False) -> list[str]:
        """Ids of runs whose name, notes or tags contain every word of `query` (a word matches as
        a prefix: `grid` finds `gridworld`), best match first, then newest. User text never
        reaches FTS syntax: each word is quoted, so `OR`, `"`, `*` or `NEAR(` are plain words.
        A control character (a NUL included) separates words. An empty query lists every run; one
        with no searchable word matches none."""
        # as list_runs: only a run stored as archived (1) is left out, never one whose flag is garbage
        where = "" if include_archived else " AND NOT (typeof(r.archived) = 'integer' AND r.archived = 1)"
        if not query.strip():
            return self._ids(self.db.execute(f"SELECT id FROM runs r WHERE 1{where} ORDER BY created_at DESC"))
        words = [w for w in _SEPARATORS.sub(" ", query).split() if any(ch.isalnum() for ch in w)]
        if not words:
            return []
        if not self._has_search_index():
            return self._search_like(words, where)
        match = " ".join('"' + w.replace('"', '""') + '"*' for w in words)
        return self._ids(self.db.execute(
            "SELECT r.id FROM runs_fts JOIN runs r ON r.rowid = runs_fts.rowid "
            f"WHERE runs_fts MATCH ?{where} ORDER BY runs_fts.rank, r.created_at DESC", [match]))

    @staticmethod
    def _ids(rows: Iterable) -> list[str]:
        """Run ids as the run rows carry them (a hand-edited id that is a blob or NULL as text)."""
        return [TEXT.salvage(r[0]) for r in rows]

    def _has_search_index(self) -> bool:
        return self.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'runs_fts'").fetchone() is not None

    def _search_like(self, words: list[str], where: str) -> list[str]:
        """The same contract without FTS5 (substring rather than word-prefix match)."""
        cond, args = [], []
        for w in words:
            pat = "%" + w.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            cond.append("(" + " OR ".join(f"r.{c} LIKE ? ESCAPE '\\'" for c in FTS_COLUMNS) + ")")
            args += [pat] * len(FTS_COLUMNS)
        return self._ids(self.db.execute(
            f"SELECT r.id FROM runs r WHERE {' AND '.join(cond)}{where} ORDER BY r.created_at DESC", args))

    def rebuild_search(self) -> None:
        """Rebuild the search index from the runs table (after a VACUUM, which may renumber the
        rowids the index refers to)."""
        if self._has_search_index():
            with self._write() as conn:
                conn.execute("INSERT INTO runs_fts (runs_fts) VALUES ('rebuild')")
