"""Measure the built-in answerer (no model) on a question set over a site's pages, beside its baseline.

manage.py evaluate_answers                      # the Flask docs set, old and new answerer
manage.py evaluate_answers --answerer new -v 2  # one answerer, each question on stderr
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents.answer import extractive_answer
from agents.evaluation import answers, baseline
from config.backends import embedders

ROOT = Path(__file__).resolve().parents[3]
DEFAULT_QUESTIONS = ROOT / "agents" / "evaluation" / "flask_qa.jsonl"
DATA = Path(os.environ.get("GROUNDED_SHARED_DATA", ROOT.parent / "shared" / "data"))
ANSWERERS = {"old": baseline.extractive_answer, "new": extractive_answer}


class Command(BaseCommand):
    help = "Ask a question set through the chat turn without a model; print answer and citation accuracy."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--questions", type=Path, default=DEFAULT_QUESTIONS)
        parser.add_argument("--site", type=Path, default=DATA / "sites" / "flask-docs")
        parser.add_argument("--answerer", choices=["old", "new", "both"], default="both")
        parser.add_argument("--limit", type=int, default=0, help="Ask only the first N questions.")

    def handle(self, *args: object, **opts: object) -> None:
        site: Path = opts["site"]
        if not site.is_dir():
            raise CommandError(f"No site at {site}; pass --site or set GROUNDED_SHARED_DATA.")
        questions = answers.load_questions(opts["questions"])
        if opts["limit"]:
            questions = questions[: opts["limit"]]
        workspace = answers.index_site(site, log=self.stderr.write)
        problems = answers.annotation_problems(workspace, questions)
        if problems:
            raise CommandError("The question set does not match the site:\n" + "\n".join(problems))
        embedders["default"].embed_query("warm-up")
        names = ["old", "new"] if opts["answerer"] == "both" else [opts["answerer"]]
        result: dict[str, object] = {}
        retrieved: list[bool] = []
        fact_retrieved: list[bool] = []
        for name in names:
            started = time.monotonic()
            outcomes = []
            for question in questions:
                outcome = answers.ask(workspace, question, ANSWERERS[name])
                outcomes.append(outcome)
                if opts["verbosity"] >= 2:
                    mark = ("ok " if outcome.answered else "MISS") + (
                        "" if outcome.fact_retrieved else " (not retrieved)"
                    )
                    self.stderr.write(f"[{name}] {mark} {question.id} {question.question}")
                    self.stderr.write(f"    {outcome.answer}")
            retrieved = [o.retrieved for o in outcomes]
            fact_retrieved = [o.fact_retrieved for o in outcomes]
            summary = answers.summarise(outcomes)
            summary["seconds_per_question"] = round((time.monotonic() - started) / max(len(questions), 1), 3)
            result[name] = summary
        result.update(
            retrieval_hit_rate=round(sum(retrieved) / max(len(retrieved), 1), 3),
            fact_retrieved_rate=round(sum(fact_retrieved) / max(len(fact_retrieved), 1), 3),
            n=len(questions),
            questions=str(opts["questions"].name),
            embedder=embedders["default"].model_name,
        )
        self.stdout.write(json.dumps(result))
