"""The admin UI's settings page of one source (title, schedule, pause, labels, chunking) and the chunk
previews it and the add dialog show. Writes go through sources/web/forms.py into ingestion."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods, require_POST

from agents.models import Agent
from ingestion import chunk_settings
from ingestion.kinds.config import KindError
from sources.models import Membership, Source
from sources.web import forms, presenters
from sources.web.decorators import for_agent, for_source, forbidden, manager_required, wants_json
from sources.web.lookups import SignedInRequest
from sources.web.views.common import (
    back_to_sources,
    body_of,
    errors_response,
    source_layout,
)


@require_http_methods(["GET", "POST"])
@for_source
def source_settings(request: SignedInRequest, source: Source, membership: Membership) -> HttpResponse:
    """A source's title, sync schedule, pause, labels and chunking; everyone sees them, owners and admins
    change them. The Preview button (without JavaScript) shows the chunks typed settings make, unsaved."""
    errors: dict[str, list[str]] = {}
    status = 200
    chunking = forms.chunking_text(source)
    chunk_preview = None
    if request.method == "POST" and "preview" in request.POST:
        chunking = {name: str(request.POST.get(name, "")) for name in chunking}
        try:
            chunk_preview = _chunk_preview(source, request.POST)
        except KindError as exc:
            errors, status = exc.errors, 400
    elif request.method == "POST":
        if not membership.can_manage:
            return forbidden(request)
        try:
            forms.source_settings(source=source, form=body_of(request))
        except KindError as exc:
            errors, status = exc.errors, 400
        else:
            if wants_json(request):
                return JsonResponse({"id": source.id})
            messages.success(request, f"{source.title}: settings saved.")
            return back_to_sources(source)
        if wants_json(request):
            return errors_response(errors, status)
    context = source_layout(
        request,
        membership,
        source,
        schedules=presenters.schedule_choices(),
        errors=errors,
        labels=forms.labels_text(source),
        chunking=chunking,
        chunk_defaults={"size": settings.CHUNK_TARGET_CHARS, "overlap": settings.CHUNK_OVERLAP_CHARS},
        chunk_preview=chunk_preview,
    )
    return render(request, "app/source_settings.html", context, status=status)


def _chunk_preview(source: Source | None, form: Any) -> dict[str, Any]:
    """The chunks the typed settings make of the typed text, or of the source's own kept text."""
    chosen = chunk_settings.validated(forms.form_chunking(form) or {})
    text = str(form.get("preview_text") or form.get("content") or "")
    if source is None:
        if not text.strip():
            raise KindError({"content": ["Paste the text to preview first."]})
        chunking = chunk_settings.default_chunking(chosen)
        return chunk_settings.preview(chunking=chunking, texts=[("Pasted text", text)]).as_dict()
    return chunk_settings.source_preview(source=source, chosen=chosen, text=text).as_dict()


@require_POST
@for_source
def source_chunk_preview(request: SignedInRequest, source: Source, membership: Membership) -> JsonResponse:
    """The settings page's Preview: nothing is saved, so every member may look."""
    try:
        return JsonResponse(_chunk_preview(source, body_of(request)))
    except KindError as exc:
        return errors_response(exc.errors)


@require_POST
@for_agent
@manager_required
def text_chunk_preview(request: SignedInRequest, agent: Agent, membership: Membership) -> JsonResponse:
    """The add dialog's Preview: the chunks its settings make of the pasted text, before it is added."""
    try:
        return JsonResponse(_chunk_preview(None, body_of(request)))
    except KindError as exc:
        return errors_response(exc.errors)
