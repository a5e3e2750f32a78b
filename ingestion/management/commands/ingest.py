"""Push a folder of documents to an agent, through the documents API's service (ingestion/push/documents.py).

    manage.py ingest docs/ --agent 3 --base-url https://docs.acme.example [--dry-run] [--prune]

Each file is a document whose id is its path relative to the folder (ingestion/push/folder.py says which
files and how they are read). Changed documents are stored and queued for the index workers; unchanged
ones are left alone, so a re-run with nothing changed embeds nothing. --prune removes the agent's pushed
documents whose files are gone; --dry-run prints what would be created, changed or removed, with the
chunks of each new or changed file, and writes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from ingestion.kinds.config import KindError
from ingestion.push import documents as push
from ingestion.push.folder import FolderDocument, FolderFileError, read_document, walk
from ingestion.text.chunking import chunk_text
from sources.models import Source


class Command(BaseCommand):
    help = "Push a folder of Markdown, MDX, text and office files to an agent as pushed documents."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("path", type=Path, help="the folder to push")
        parser.add_argument("--agent", type=int, required=True, help="the agent's id")
        parser.add_argument("--base-url", default="", help="cite each file at this address + its path")
        parser.add_argument("--dry-run", action="store_true", help="print what would change; write nothing")
        parser.add_argument("--prune", action="store_true", help="remove pushed documents whose file is gone")

    def handle(self, *args: Any, **options: Any) -> None:
        self.verbosity = options["verbosity"]
        root: Path = options["path"].resolve()
        if not root.is_dir():
            raise CommandError(f"{root} is not a folder.")
        # An operator's command: the agent's id says which workspace it writes to. (The agents app sits
        # above ingestion; its model is reached through the source's foreign key.)
        agent_model: Any = Source._meta.get_field("agent").related_model  # agents.models.Agent
        agent = agent_model.unscoped.select_related("workspace").filter(id=options["agent"]).first()
        if agent is None:
            raise CommandError(f"No agent with id {options['agent']}.")
        files = walk(root)
        self.stdout.write(f"{len(files)} files under {root} for agent {agent.id} ({agent.name}).")
        documents, failures = self._read(root, files, options["base_url"])
        # Files that could not be read are still there: only documents whose file is gone are removed.
        keep = {path.relative_to(root).as_posix() for path in files} if options["prune"] else None
        if options["dry_run"]:
            self._dry_run(agent, documents, keep=keep)
        else:
            self._push(agent, documents, keep=keep, failures=failures)
        if failures:
            raise CommandError(f"{len(failures)} of {len(files)} files could not be pushed (listed above).")

    def _read(self, root: Path, files: list[Path], base_url: str) -> tuple[list[push.Prepared], list[str]]:
        prepared, failures = [], []
        for path in files:
            external_id = path.relative_to(root).as_posix()
            try:
                document: FolderDocument = read_document(root, path, base_url=base_url)
                prepared.append(push.prepare(external_id=external_id, payload=document.payload))
            except FolderFileError as exc:
                failures.append(external_id)
                self.stderr.write(f"  error    {external_id}: {exc}")
                continue
            except (KindError, push.DocumentTooLarge) as exc:
                failures.append(external_id)
                problems = "; ".join(f"{k}: {' '.join(v)}" for k, v in exc.errors.items())
                self.stderr.write(f"  error    {external_id}: {problems}")
                continue
            for warning in document.warnings:
                self.stderr.write(f"  warning  {external_id}: {warning}")
        return prepared, failures

    def _dry_run(self, agent: Any, documents: list[push.Prepared], *, keep: set[str] | None) -> None:
        planned = push.plan(workspace=agent.workspace, agent_id=agent.id, documents=documents, keep=keep)
        for label, group in (("create", planned.create), ("change", planned.change)):
            for document in group:
                pieces = chunk_text(
                    document.text,
                    target_chars=settings.CHUNK_TARGET_CHARS,
                    overlap_chars=settings.CHUNK_OVERLAP_CHARS,
                )
                self.stdout.write(f"  {label:<8} {document.external_id} ({len(pieces)} chunks)")
                for piece in pieces:
                    preview = " ".join(piece.text.split())
                    if self.verbosity < 2 and len(preview) > 100:
                        preview = preview[:100] + "…"
                    self.stdout.write(f"      [{piece.position}] {preview}")
        for external_id in planned.remove:
            self.stdout.write(f"  remove   {external_id}")
        self.stdout.write(
            f"Dry run: {len(planned.create)} to create, {len(planned.change)} to change, "
            f"{len(planned.unchanged)} unchanged, {len(planned.remove)} to remove. Nothing was written."
        )

    def _push(
        self,
        agent: Any,
        documents: list[push.Prepared],
        *,
        keep: set[str] | None,
        failures: list[str],
    ) -> None:
        counts = {"created": 0, "updated": 0, "unchanged": 0, "invalid": 0}
        batch = settings.PUSH_BATCH_MAX_DOCUMENTS
        for start in range(0, len(documents), batch):
            outcomes = push.put_documents(
                workspace=agent.workspace,
                agent_id=agent.id,
                items=[(d.external_id, d) for d in documents[start : start + batch]],
            )
            for outcome in outcomes:
                counts[outcome.result] += 1
                if outcome.result == "invalid":
                    failures.append(outcome.external_id)
                    self.stderr.write(f"  error    {outcome.external_id}: {outcome.errors}")
                elif outcome.result != "unchanged" or self.verbosity >= 2:
                    self.stdout.write(f"  {outcome.result:<9}{outcome.external_id}")
        removed: list[str] = []
        if keep is not None:
            known = push.fingerprints(workspace=agent.workspace, agent_id=agent.id)
            removed = push.delete_documents(
                workspace=agent.workspace, agent_id=agent.id, external_ids=sorted(set(known) - keep)
            )
            for external_id in removed:
                self.stdout.write(f"  removed  {external_id}")
        self.stdout.write(
            f"{counts['created']} created, {counts['updated']} updated (queued for indexing), "
            f"{counts['unchanged']} unchanged, {len(removed)} removed."
        )
