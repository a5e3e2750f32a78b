"""The admin UI's lists of one source's pages that were not indexed: those that failed (retried from the
sources page) and those skipped on purpose, each of which can be indexed anyway. Writes go through
ingestion.lifecycle; presenters shape the rows.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from ingestion import lifecycle
from ingestion.kinds.config import KindError
from sources.models import Membership, Source
from sources.quotas import QuotaExceeded
from sources.tenancy import workspace_scope
from sources.web import presenters
from sources.web.decorators import for_source, manager_required, wants_json
from sources.web.lookups import SignedInRequest
from sources.web.views.common import body_of, errors_response, quota_refused, source_layout


@require_GET
@for_source
def source_failed_pages(request: SignedInRequest, source: Source, membership: Membership) -> HttpResponse:
    """The pages that failed, each with its reason and a link to it, and one button to retry them all; the
    pages skipped on purpose have their own list (source_skipped_pages), linked from here."""
    context = source_layout(
        request,
        membership,
        source,
        failed=presenters.failed_pages(source),
    )
    return render(request, "app/source_failed.html", context)


@require_http_methods(["GET", "POST"])
@for_source
def source_skipped_pages(request: SignedInRequest, source: Source, membership: Membership) -> HttpResponse:
    """GET: the pages skipped on purpose (too little text, only links, a search page), each with its reason
    in words and the size of its text. POST (owners and admins): "Index anyway" for one of them
    (`document`), which is fetched again and kept, on every sync after too."""
    if request.method == "POST":
        return _index_anyway(request, source, membership)
    context = source_layout(
        request,
        membership,
        source,
        skipped=presenters.skipped_pages(source),
    )
    return render(request, "app/source_skipped.html", context)


@manager_required
def _index_anyway(request: SignedInRequest, source: Source, membership: Membership) -> HttpResponse:
    document_id = str(body_of(request).get("document", ""))
    with workspace_scope(source.workspace_id):
        document = source.documents.filter(id=int(document_id)).first() if document_id.isdigit() else None
    try:
        if document is None:
            raise KindError({"document": ["No such page in this source."]})
        lifecycle.index_anyway(document=document)
    except KindError as exc:
        if wants_json(request):
            return errors_response(exc.errors)
        messages.error(request, " ".join(m for ms in exc.errors.values() for m in ms))
        return redirect("app-source-skipped", source_id=source.id)
    except QuotaExceeded as exc:
        if wants_json(request):
            return quota_refused(exc)
        messages.error(request, exc.message)
        return redirect("app-source-skipped", source_id=source.id)
    if wants_json(request):
        return JsonResponse({"id": document.id, "source": source.id}, status=202)
    messages.success(request, f"{document.url}: it is being fetched again and indexed however short it is.")
    return redirect("app-source-skipped", source_id=source.id)
