"""The admin UI's pages about an agent's sources: the list (with its live refresh), adding, discovering
pages, and one source's preview, reindex, recrawl, re-upload, retry and delete (its settings page is
source_settings.py). Writes go through
ingestion.lifecycle; presenters shape rows; the decorators check who may see and change what.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from agents.models import Agent
from ingestion import lifecycle
from ingestion.kinds.config import KindError
from ingestion.kinds.registry import fetching_kind_names
from ingestion.kinds.upload import UploadTooLarge, human_size
from sources import selectors
from sources.models import Membership, Source
from sources.quotas import QuotaExceeded
from sources.tenancy import workspace_scope
from sources.web import forms, presenters, source_listing
from sources.web.decorators import for_agent, for_source, manager_required, wants_json
from sources.web.lookups import SignedInRequest
from sources.web.views.common import (
    back_to_sources,
    body_of,
    errors_response,
    layout,
    quota_refused,
    source_layout,
)

# --- an agent's sources ---------------------------------------------------------------------------------


def _sources_context(agent: Agent, query: Any) -> dict[str, Any]:
    """One page of rows as the search, filters and sort in `query` (request.GET) choose them, with the
    agent's counts over every source (the cards do not change with the filters)."""
    listing = source_listing.source_listing(query)
    found = selectors.agent_sources(workspace_id=agent.workspace_id, agent_id=agent.id, **listing)
    counts = selectors.agent_source_counts(workspace_id=agent.workspace_id, agent_id=agent.id)
    kinds = selectors.agent_source_kinds(workspace_id=agent.workspace_id, agent_id=agent.id)
    rows = [presenters.source_row(s) for s in found.sources]
    return {
        "rows": rows,
        "counts": counts,
        # Whether the page keeps polling. The rows and the counts are two queries: a job that ends between
        # them leaves a row still indexing beside counts with nothing in progress, and a page that went by
        # the counts alone stopped polling with that row stuck on "indexing" (seen in the suite).
        "active": counts["active"] > 0 or any(row["active"] for row in rows),
        "only": listing["status"],
        "listing": source_listing.listing_context(listing, found, kinds=kinds),
    }


def _sources_page(
    request: SignedInRequest, agent: Agent, membership: Membership, status: int = 200, **extra: Any
) -> HttpResponse:
    context = layout(
        request,
        membership,
        agent=agent,
        tab="sources",
        kinds=presenters.add_dialog_kinds(),
        upload_max_bytes=settings.UPLOAD_MAX_FILE_BYTES,
        # Worded as the server words the limit, so the page and the server say the same.
        upload_max_label=human_size(settings.UPLOAD_MAX_FILE_BYTES),
        poll_ms=settings.SOURCES_PAGE_POLL_MS,
        upload_max_files=settings.UPLOAD_MAX_FILES_PER_REQUEST,
        schedules=presenters.schedule_choices(),
        default_schedule=membership.workspace.default_schedule,
        chunk_defaults={"size": settings.CHUNK_TARGET_CHARS, "overlap": settings.CHUNK_OVERLAP_CHARS},
        **_sources_context(agent, request.GET),
        **extra,
    )
    return render(request, "app/agent_sources.html", context, status=status)


@require_GET
@for_agent
def agent_sources(request: SignedInRequest, agent: Agent, membership: Membership) -> HttpResponse:
    return _sources_page(request, agent, membership, add_kind=request.GET.get("add", ""))


@require_GET
@for_agent
def agent_sources_json(request: SignedInRequest, agent: Agent, membership: Membership) -> JsonResponse:
    """What the sources page polls while something is in flight: each row, drawn by the same template."""
    context = _sources_context(agent, request.GET)
    rows = [
        {
            "id": row["id"],
            "status": row["status"],
            "version": row["version"],
            "html": render_to_string(
                "app/_source_row.html", {"row": row, "can_manage": membership.can_manage}, request
            ),
        }
        for row in context["rows"]
    ]
    counts = context["counts"]
    listing = context["listing"]
    return JsonResponse(
        {
            "active": context["active"],
            "counts": counts,
            "rows": rows,
            "matched": listing["matched"],
            "matched_label": listing["matched_label"],
        }
    )


def _delete(source: Source) -> bool:
    lifecycle.source_delete(source=source)
    return True


BULK_ACTIONS: dict[str, Callable[[Source], bool]] = {
    # Each returns whether it did something for that source; busy or unsuitable sources are skipped.
    "retry": lambda source: lifecycle.retry_failed(source=source) > 0,
    "reindex": lambda source: presenters.reindex_helps(source) and lifecycle.source_reindex(source=source),
    "delete": _delete,
}
BULK_VERBS = {"retry": "Retrying failed pages of", "reindex": "Reindexing", "delete": "Deleted"}


@require_POST
@for_agent
@manager_required
def sources_bulk(request: SignedInRequest, agent: Agent, membership: Membership) -> HttpResponse:
    """Retry, reindex or delete the ticked sources, each through ingestion.lifecycle."""
    body = body_of(request)
    action = str(body.get("action", ""))
    raw_ids = body.get("ids") if isinstance(body.get("ids"), list) else request.POST.getlist("ids")
    ids = [int(i) for i in raw_ids or [] if str(i).isdigit()]
    if action not in BULK_ACTIONS or not ids:
        errors = {"action": ["Tick at least one source and choose retry, reindex or delete."]}
        if wants_json(request):
            return errors_response(errors)
        messages.error(request, errors["action"][0])
        return redirect("app-agent-sources", agent_id=agent.id)
    with workspace_scope(agent.workspace_id):
        chosen = list(Source.objects.filter(agent_id=agent.id, id__in=ids[:500]))
    done = sum(1 for source in chosen if BULK_ACTIONS[action](source))
    skipped = len(chosen) - done
    text = f"{BULK_VERBS[action]} {done} source{'s' if done != 1 else ''}."
    if skipped:
        text += f" {skipped} skipped (busy, or nothing that action can help with)."
    if wants_json(request):
        return JsonResponse({"action": action, "done": done, "skipped": skipped, "message": text})
    messages.success(request, text)
    return redirect("app-agent-sources", agent_id=agent.id)


@require_POST
@for_agent
@manager_required
def source_add(request: SignedInRequest, agent: Agent, membership: Membership) -> HttpResponse:
    """Add a source of any kind: JSON or a form post, files as multipart (one source per file)."""
    body = body_of(request)
    try:
        created = forms.source_add(
            workspace=membership.workspace,
            agent=agent,
            form=body,
            files=request.FILES.getlist("file"),
            content_length=int(request.META.get("CONTENT_LENGTH") or 0),
        )
    except (KindError, UploadTooLarge) as exc:
        if isinstance(exc, UploadTooLarge):
            errors, status = {"file": [exc.message]}, 413
        else:
            errors, status = exc.errors, 400
        if wants_json(request):
            return errors_response(errors, status)
        # Without JavaScript: the same page, with the dialog open, what was typed and the messages.
        add_kind = str(body.get("kind") or "url")
        return _sources_page(
            request, agent, membership, status, add_kind=add_kind, add_values=body, add_errors=errors
        )
    except QuotaExceeded as exc:
        if wants_json(request):
            return quota_refused(exc)
        messages.error(request, exc.message)  # the banner; the dialog repeats it beside its button
        return _sources_page(
            request,
            agent,
            membership,
            exc.status,
            add_kind=str(body.get("kind") or "url"),
            add_values=body,
            add_errors={"non_field_errors": [exc.message]},
        )
    if wants_json(request):
        return JsonResponse({"sources": [s.id for s in created]}, status=201)
    names = ", ".join(s.title for s in created)
    messages.success(request, f"Added {names}. It is being processed; this page shows its progress.")
    return redirect("app-agent-sources", agent_id=agent.id)


@require_POST
@for_agent
@manager_required
def discover(request: SignedInRequest, agent: Agent, membership: Membership) -> JsonResponse:
    try:
        pages = forms.discover_pages(str(body_of(request).get("domain", "")))
    except KindError as exc:
        return errors_response(exc.errors)
    with workspace_scope(agent.workspace_id):
        web_sources = Source.objects.filter(agent_id=agent.id, kind__in=fetching_kind_names())
        known = set(web_sources.values_list("config__url", flat=True))
    for page in pages:
        page["added"] = page["url"] in known
    return JsonResponse({"pages": pages})


@require_POST
@for_agent
@manager_required
def discover_add(request: SignedInRequest, agent: Agent, membership: Membership) -> JsonResponse:
    pages = body_of(request).get("pages")
    if not isinstance(pages, list) or not pages or not all(isinstance(p, dict) for p in pages):
        return errors_response({"pages": ["Tick at least one page to add."]})
    created, errors = forms.url_sources_create(workspace=membership.workspace, agent=agent, pages=pages)
    status = 201 if created else 400
    return JsonResponse({"sources": [s.id for s in created], "errors": errors}, status=status)


# --- one source ---------------------------------------------------------------------------------------


@require_POST
@for_source
@manager_required
def source_reprocess(
    request: SignedInRequest, source: Source, membership: Membership, action: str
) -> HttpResponse:
    """Reindex (chunk and embed again from what is kept) or recrawl (fetch a web source again)."""
    if action == "recrawl":
        started = lifecycle.source_recrawl(source=source)
        refusal = "Only web sources that are not already crawling can be recrawled."
    else:
        started = lifecycle.source_reindex(source=source)
        refusal = "This source is already being processed; try again when it has finished."
    if wants_json(request):
        if not started:
            return JsonResponse({"source": [refusal]}, status=400)
        return JsonResponse({"id": source.id}, status=202)
    if started:
        messages.success(request, f"{source.title}: {action} started.")
    else:
        messages.error(request, f"{source.title}: {refusal}")
    return back_to_sources(source)


@require_http_methods(["GET", "POST"])
@for_source
@manager_required
def source_delete(request: SignedInRequest, source: Source, membership: Membership) -> HttpResponse:
    """GET: the confirmation page (the dialog's stand-in without JavaScript); POST: delete."""
    if request.method == "GET":
        context = layout(request, membership, agent=source.agent, row=presenters.source_row(source))
        return render(request, "app/source_delete.html", context)
    title, source_id = source.title, source.id
    lifecycle.source_delete(source=source)
    if wants_json(request):
        return JsonResponse({"deleted": source_id})
    messages.success(request, f"Deleted {title}.")
    return back_to_sources(source)


@require_POST
@for_source
@manager_required
def source_reupload(request: SignedInRequest, source: Source, membership: Membership) -> HttpResponse:
    upload = request.FILES.get("file")
    try:
        if upload is None:
            raise KindError({"file": ["Choose the file to upload again."]})
        lifecycle.upload_replace(source=source, upload=upload)
    except UploadTooLarge as exc:
        errors, status = {"file": [exc.message]}, 413
    except KindError as exc:
        errors, status = exc.errors, 400
    else:
        if wants_json(request):
            return JsonResponse({"id": source.id}, status=202)
        messages.success(request, f"{source.title}: uploaded again; it is being indexed.")
        return back_to_sources(source)
    if wants_json(request):
        return errors_response(errors, status)
    messages.error(request, " ".join(m for ms in errors.values() for m in ms))
    return back_to_sources(source)


@require_GET
@for_source
def source_preview_page(request: SignedInRequest, source: Source, membership: Membership) -> HttpResponse:
    preview = presenters.source_preview_titled(source)
    context = source_layout(
        request,
        membership,
        source,
        preview=preview,
        fragment=request.GET.get("fragment") == "1",
    )
    template = "app/_source_preview_body.html" if context["fragment"] else "app/source_preview.html"
    return render(request, template, context)


@require_POST
@for_source
@manager_required
def source_retry_failed(request: SignedInRequest, source: Source, membership: Membership) -> HttpResponse:
    try:
        queued = lifecycle.retry_failed(source=source)
    except QuotaExceeded as exc:
        if wants_json(request):
            return quota_refused(exc)
        messages.error(request, exc.message)
        return back_to_sources(source)
    if wants_json(request):
        if not queued:
            return JsonResponse({"source": ["No failed pages, or the source is busy."]}, status=400)
        return JsonResponse({"id": source.id, "retried": queued}, status=202)
    if queued:
        plural = "s" if queued != 1 else ""
        messages.success(request, f"{source.title}: retrying {queued} failed page{plural}.")
    else:
        messages.error(request, f"{source.title}: no failed pages to retry, or it is busy; try again later.")
    return back_to_sources(source)
