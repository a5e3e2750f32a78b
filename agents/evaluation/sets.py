"""The question sets `evaluate_answers` knows by name: each is a file of ours beside this module, over one
site of the shared data (../shared/data/sites), which stays where it is.

A set over a site nobody has tuned on yet is committed before any tuning on that site (issue #52), so the
history shows that the questions were written blind; add new sets here the same way.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SHARED_DATA = Path(os.environ.get("GROUNDED_SHARED_DATA", ROOT.parent / "shared" / "data"))


@dataclass(frozen=True)
class QuestionSet:
    name: str
    questions_file: str  # beside this module
    site_folder: str  # under the shared data's sites/
    page_pattern: str = "*.html"  # a glob, then any "!glob" left out

    @property
    def questions(self) -> Path:
        return HERE / self.questions_file

    @property
    def site(self) -> Path:
        return SHARED_DATA / "sites" / self.site_folder


SETS: dict[str, QuestionSet] = {
    s.name: s
    for s in (
        QuestionSet("flask", "flask_qa.jsonl", "flask-docs"),
        QuestionSet("flask-holdout", "flask_qa_holdout.jsonl", "flask-docs"),
        QuestionSet("requests", "requests_qa.jsonl", "requests-docs"),
        QuestionSet("mkdocs", "mkdocs_qa.jsonl", "mkdocs-docs"),
        # Debian names the guide's pages page.<lang>.html; the questions are on the English ones.
        QuestionSet("maint-guide", "maint_guide_qa.jsonl", "maint-guide", page_pattern="*.en.html"),
        # Written blind (#52): no tuning on these sites before their set was committed. Pages in subfolders
        # (usage/extensions/..., howto/...) are pages too: site_pages() globs recursively.
        QuestionSet("sphinx", "sphinx_qa.jsonl", "sphinx-docs"),
        # git-docs also holds each page's AsciiDoc source (.txt): the pages are the .html files.
        QuestionSet("git", "git_qa.jsonl", "git-docs"),
        # node-api's .json.gz/.md.gz are the same docs in other formats: the pages are the .html files. Its
        # all.html repeats every other page in one, so each fact would be on that page as well as on its
        # own and a citation of it would count as wrong: it is left out, as a duplicate of the others.
        QuestionSet("node", "node_qa.jsonl", "node-api", page_pattern="*.html !all.html"),
        # Second sets, written blind (#52) without reading the answerer or its results, on 20 pages per site
        # that the first sets above do not use, each fact on its own page only; committed before any tuning
        # on those pages.
        QuestionSet("git2", "git2_qa.jsonl", "git-docs"),
        QuestionSet("sphinx2", "sphinx2_qa.jsonl", "sphinx-docs"),
        QuestionSet("node2", "node2_qa.jsonl", "node-api", page_pattern="*.html !all.html"),
    )
}
