"""Measure the built-in answerer (no model) on question sets over sites' pages, beside its baseline.

manage.py evaluate_answers                                  # every named set, old and new answerer
manage.py evaluate_answers --set requests --set mkdocs      # some of them (names: agents/evaluation/sets.py)
manage.py evaluate_answers --set flask --answerer new -v 2  # one answerer, each question on stderr
manage.py evaluate_answers --questions FILE [--site DIR]    # a set of your own (the site: Flask's docs)

Prints one JSON line per set on stdout, and a table of the same figures on stderr.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, NamedTuple

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents.answer import extractive_answer
from agents.evaluation import answers, baseline
from agents.evaluation.sets import SETS
from config.backends import embedders

ANSWERERS = {"old": baseline.extractive_answer, "new": extractive_answer}


class Run(NamedTuple):
    name: str
    questions: Path
    site: Path
    page_pattern: str


class Command(BaseCommand):
    help = "Ask question sets through the chat turn without a model; print answer and citation accuracy."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--set",
            action="append",
            dest="sets",
            choices=[*SETS, "all"],
            help="A named question set; repeat for several. Default: all of them.",
        )
        parser.add_argument("--questions", type=Path, help="A question set of your own (JSON lines).")
        parser.add_argument(
            "--site", type=Path, help="The site folder of --questions (default: Flask's docs)."
        )
        parser.add_argument("--answerer", choices=["old", "new", "both"], default="both")
        parser.add_argument(
            "--limit", type=int, default=0, help="Ask only the first N questions of each set."
        )

    def handle(self, *args: object, **opts: Any) -> None:
        runs = self._runs(opts)
        sets = []
        for run in runs:
            if not run.site.is_dir():
                raise CommandError(f"No site at {run.site}; pass --site or set GROUNDED_SHARED_DATA.")
            questions = answers.load_questions(run.questions)
            if opts["limit"]:
                questions = questions[: opts["limit"]]
            problems = answers.annotation_problems(run.site, questions, run.page_pattern)
            if problems:
                raise CommandError(
                    f"The question set {run.name} does not match its site:\n" + "\n".join(problems)
                )
            sets.append((run, questions))
        embedders["default"].embed_query("warm-up")
        names = ["old", "new"] if opts["answerer"] == "both" else [opts["answerer"]]
        results = [self._evaluate(run, questions, names, opts["verbosity"]) for run, questions in sets]
        for result in results:
            self.stdout.write(json.dumps(result))
        self._table(results, names)

    def _runs(self, opts: dict[str, Any]) -> list[Run]:
        if opts["questions"] or opts["site"]:
            if opts["sets"]:
                raise CommandError("Pass either --set or --questions/--site, not both.")
            questions = opts["questions"] or SETS["flask"].questions
            return [Run(questions.stem, questions, opts["site"] or SETS["flask"].site, "*.html")]
        chosen = opts["sets"] or ["all"]
        named = list(SETS) if "all" in chosen else list(dict.fromkeys(chosen))
        return [Run(s.name, s.questions, s.site, s.page_pattern) for s in (SETS[name] for name in named)]

    def _evaluate(
        self, run: Run, questions: list[answers.Question], names: list[str], verbosity: int
    ) -> dict[str, Any]:
        workspace = answers.index_site(run.site, log=self.stderr.write, pattern=run.page_pattern)
        losses = answers.extraction_losses(workspace, questions)
        for question_id, loss in losses.items():
            self.stderr.write(f"[{run.name}] {question_id}: {loss}")
        result: dict[str, Any] = {}
        retrieved: list[bool] = []
        fact_retrieved: list[bool] = []
        for name in names:
            started = time.monotonic()
            outcomes = []
            for question in questions:
                outcome = answers.ask(workspace, question, ANSWERERS[name])
                outcomes.append(outcome)
                if verbosity >= 2:
                    self.stderr.write(
                        f"[{run.name} {name}] {_mark(outcome, question.id in losses)} {question.id} "
                        f"{question.question}"
                    )
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
            questions=str(run.questions.name),
            embedder=embedders["default"].model_name,
            set=run.name,
            lost_in_extraction=sorted(losses),
        )
        return result

    def _table(self, results: list[dict[str, Any]], names: list[str]) -> None:
        header = f"{'set':<16}{'n':>4}"
        for name in names:
            header += f"{name + ' answer':>13}{name + ' citation':>15}"
        self.stderr.write(header + f"{'retrieval':>11}{'fact retr.':>12}{'lost':>6}")
        for r in results:
            row = f"{r['set']:<16}{r['n']:>4}"
            for name in names:
                row += f"{r[name]['answer_accuracy']:>13.3f}{r[name]['citation_accuracy']:>15.3f}"
            lost = len(r["lost_in_extraction"])
            self.stderr.write(
                row + f"{r['retrieval_hit_rate']:>11.3f}{r['fact_retrieved_rate']:>12.3f}{lost:>6}"
            )


def _mark(outcome: answers.Outcome, lost: bool) -> str:
    """Why a question was missed: the fact lost before indexing, never given to the answerer, or given and
    not chosen."""
    if outcome.answered:
        return "ok  " if outcome.cited else "ok (not cited)"
    if lost:
        return "MISS (fact not in the indexed text of its page)"
    if not outcome.fact_retrieved:
        return (
            "MISS (fact not retrieved; its page was)"
            if outcome.retrieved
            else "MISS (fact not retrieved, nor its page)"
        )
    return "MISS (retrieved, not selected)"
