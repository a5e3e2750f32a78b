"""The admin's web UI: server-rendered pages, plus small JSON answers for the pages' own scripts.

Everyone in a workspace sees its agents and sources; only owners and admins change them. Every view
that changes something checks the role itself, so a hidden button is never the only guard. Another
workspace's agent or source answers 404, like a missing one.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Sum
from django.db.models.functions import Coalesce
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from agents import services as agent_services
from agents.forms import AgentSettingsForm
from agents.models import Agent
from sources import selectors, services, ui_services
from sources.kinds import CRAWLED_KINDS, KindError
from sources.models import Membership, Source
from sources.selectors import current_membership, memberships_of
from sources.services import human_size
from sources.tenancy import workspace_scope

FORBIDDEN = "Only owners and admins of this workspace can change its agents and sources."


def _wants_json(request: HttpRequest) -> bool:
    return "application/json" in request.headers.get("Accept", "")


def _forbidden(request: HttpRequest) -> HttpResponse:
    if _wants_json(request):
        return JsonResponse({"detail": FORBIDDEN}, status=403)
    return render(request, "403.html", {"message": FORBIDDEN}, status=403)


def _errors(request: HttpRequest, errors: dict, status: int = 400) -> JsonResponse:
    return JsonResponse(errors, status=status)


def _body(request: HttpRequest) -> dict[str, Any]:
    if request.content_type == "application/json":
        try:
            body = json.loads(request.body or b"{}")
        except ValueError:
            return {}
        return body if isinstance(body, dict) else {}
    return request.POST.dict()


def _layout(request: HttpRequest, membership: Membership, **extra: Any) -> dict[str, Any]:
    """What every page of the app shows around its content: the workspace switcher and the agents."""
    with workspace_scope(membership.workspace_id):
        agents = list(Agent.objects.order_by("name", "id").only("id", "name"))
    return {
        "membership": membership,
        "memberships": memberships_of(request.user),
        "nav_agents": agents,
        "can_manage": membership.can_manage,
        **extra,
    }


def _agent_page(request: HttpRequest, agent_id: int) -> tuple[Agent, Membership]:
    """The agent of a page, with the workspace it lives in made the current one (the user belongs to it)."""
    agent, membership = selectors.agent_for(request.user, agent_id)
    if request.session.get("workspace_id") != agent.workspace_id:
        request.session["workspace_id"] = agent.workspace_id
    return agent, membership


def _back_to_sources(source: Source) -> HttpResponse:
    return redirect("app-agent-sources", agent_id=source.agent_id)


# --- workspace ----------------------------------------------------------------------------------------


@login_required
@require_GET
def app_home(request: HttpRequest) -> HttpResponse:
    membership = current_membership(request)
    if membership is None:
        return render(request, "app/no_workspace.html", status=403)
    overview = ui_services.agents_overview(membership.workspace_id)
    return render(request, "app/home.html", _layout(request, membership, overview=overview))


@login_required
@require_POST
def workspace_switch(request: HttpRequest) -> HttpResponse:
    chosen = request.POST.get("workspace", "")
    membership = selectors.membership_in(request.user, int(chosen)) if chosen.isdigit() else None
    if membership is None:
        raise Http404("You are not a member of that workspace.")
    request.session["workspace_id"] = membership.workspace_id
    return redirect("app-home")


@login_required
@require_POST
def agent_new(request: HttpRequest) -> HttpResponse:
    membership = current_membership(request)
    if membership is None:
        raise Http404
    if not membership.can_manage:
        return _forbidden(request)
    name = request.POST.get("name", "").strip()
    if not name:
        messages.error(request, "Give the agent a name.")
        return redirect("app-home")
    agent = agent_services.agent_create(workspace=membership.workspace, name=name)
    return redirect("app-agent-sources", agent_id=agent.id)


@login_required
@require_http_methods(["GET", "POST"])
def agent_delete(request: HttpRequest, agent_id: int) -> HttpResponse:
    """GET: what goes with the agent; POST: delete it, once its name is typed back."""
    agent, membership = _agent_page(request, agent_id)
    if not membership.can_manage:
        return _forbidden(request)
    with workspace_scope(agent.workspace_id):
        counts = Source.objects.filter(agent_id=agent.id).aggregate(
            sources=Count("id"), chunks=Coalesce(Sum("chunks_count"), 0)
        )
    error, status = "", 200
    if request.method == "POST":
        if request.POST.get("confirm_name", "").strip() == agent.name.strip():
            name = agent.name
            agent_services.agent_delete(agent=agent)
            messages.success(request, f"Deleted {name}.")
            return redirect("app-home")
        error, status = f"Type {agent.name} exactly to confirm.", 400
    context = _layout(request, membership, agent=agent, tab="settings", counts=counts, error=error)
    return render(request, "app/agent_delete.html", context, status=status)


# --- an agent's sources ---------------------------------------------------------------------------------


@login_required
@require_GET
def agent_home(request: HttpRequest, agent_id: int) -> HttpResponse:
    return redirect("app-agent-sources", agent_id=agent_id)


def _sources_context(agent: Agent) -> dict[str, Any]:
    sources = selectors.agent_sources(agent)
    return {
        "rows": [ui_services.source_row(s) for s in sources],
        "counts": ui_services.status_counts(sources),
    }


def _sources_page(
    request: HttpRequest, agent: Agent, membership: Membership, status: int = 200, **extra: Any
) -> HttpResponse:
    context = _layout(
        request,
        membership,
        agent=agent,
        tab="sources",
        kinds=ui_services.ADDABLE_KINDS,
        upload_max_bytes=settings.UPLOAD_MAX_FILE_BYTES,
        # Written as sources.services words the limit, so the page and the server say the same.
        upload_max_label=human_size(settings.UPLOAD_MAX_FILE_BYTES),
        upload_max_files=settings.UPLOAD_MAX_FILES_PER_REQUEST,
        **_sources_context(agent),
        **extra,
    )
    return render(request, "app/agent_sources.html", context, status=status)


@login_required
@require_GET
def agent_sources(request: HttpRequest, agent_id: int) -> HttpResponse:
    agent, membership = _agent_page(request, agent_id)
    return _sources_page(request, agent, membership, add_kind=request.GET.get("add", ""))


@login_required
@require_GET
def agent_sources_json(request: HttpRequest, agent_id: int) -> JsonResponse:
    """What the sources page polls while something is in flight: each row, drawn by the same template."""
    agent, membership = selectors.agent_for(request.user, agent_id)
    context = _sources_context(agent)
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
    return JsonResponse({"active": counts["active"] > 0, "counts": counts, "rows": rows})


@login_required
@require_POST
def source_add(request: HttpRequest, agent_id: int) -> HttpResponse:
    """Add a source of any kind: JSON or a form post, files as multipart (one source per file)."""
    agent, membership = selectors.agent_for(request.user, agent_id)
    if not membership.can_manage:
        return _forbidden(request)
    body = _body(request)
    try:
        created = ui_services.source_add(
            workspace=membership.workspace,
            agent=agent,
            form=body,
            files=request.FILES.getlist("file"),
            content_length=int(request.META.get("CONTENT_LENGTH") or 0),
        )
    except (KindError, services.UploadTooLarge) as exc:
        too_large = isinstance(exc, services.UploadTooLarge)
        errors, status = ({"file": [exc.message]}, 413) if too_large else (exc.errors, 400)
        if _wants_json(request):
            return _errors(request, errors, status)
        # Without JavaScript: the same page, with the dialog open, what was typed and the messages.
        add_kind = str(body.get("kind") or "url")
        return _sources_page(
            request, agent, membership, status, add_kind=add_kind, add_values=body, add_errors=errors
        )
    if _wants_json(request):
        return JsonResponse({"sources": [s.id for s in created]}, status=201)
    names = ", ".join(s.title for s in created)
    messages.success(request, f"Added {names}. It is being processed; this page shows its progress.")
    return redirect("app-agent-sources", agent_id=agent.id)


@login_required
@require_POST
def discover(request: HttpRequest, agent_id: int) -> JsonResponse:
    agent, membership = selectors.agent_for(request.user, agent_id)
    if not membership.can_manage:
        return _forbidden(request)
    try:
        pages = ui_services.discover_pages(str(_body(request).get("domain", "")))
    except KindError as exc:
        return _errors(request, exc.errors)
    with workspace_scope(agent.workspace_id):
        web_sources = Source.objects.filter(agent_id=agent.id, kind__in=CRAWLED_KINDS)
        known = set(web_sources.values_list("config__url", flat=True))
    for page in pages:
        page["added"] = page["url"] in known
    return JsonResponse({"pages": pages})


@login_required
@require_POST
def discover_add(request: HttpRequest, agent_id: int) -> JsonResponse:
    agent, membership = selectors.agent_for(request.user, agent_id)
    if not membership.can_manage:
        return _forbidden(request)
    pages = _body(request).get("pages")
    if not isinstance(pages, list) or not pages or not all(isinstance(p, dict) for p in pages):
        return _errors(request, {"pages": ["Tick at least one page to add."]})
    created, errors = ui_services.url_sources_create(workspace=membership.workspace, agent=agent, pages=pages)
    status = 201 if created else 400
    return JsonResponse({"sources": [s.id for s in created], "errors": errors}, status=status)


# --- one source ---------------------------------------------------------------------------------------


@login_required
@require_POST
def source_reprocess(request: HttpRequest, source_id: int, action: str) -> HttpResponse:
    """Reindex (chunk and embed again from what is kept) or recrawl (fetch a web source again)."""
    from ingestion.crawling import source_recrawl
    from ingestion.services import source_reindex

    source, membership = selectors.source_for(request.user, source_id)
    if not membership.can_manage:
        return _forbidden(request)
    if action == "recrawl":
        started = source_recrawl(source=source)
        refusal = "Only web sources that are not already crawling can be recrawled."
    else:
        started = source_reindex(source=source)
        refusal = "This source is already being processed; try again when it has finished."
    if _wants_json(request):
        if not started:
            return JsonResponse({"source": [refusal]}, status=400)
        return JsonResponse({"id": source.id}, status=202)
    if started:
        messages.success(request, f"{source.title}: {action} started.")
    else:
        messages.error(request, f"{source.title}: {refusal}")
    return _back_to_sources(source)


@login_required
@require_http_methods(["GET", "POST"])
def source_delete(request: HttpRequest, source_id: int) -> HttpResponse:
    """GET: the confirmation page (the dialog's stand-in without JavaScript); POST: delete."""
    source, membership = selectors.source_for(request.user, source_id)
    if not membership.can_manage:
        return _forbidden(request)
    if request.method == "GET":
        context = _layout(request, membership, agent=source.agent, row=ui_services.source_row(source))
        return render(request, "app/source_delete.html", context)
    title = source.title
    services.source_delete(source=source)
    if _wants_json(request):
        return JsonResponse({"deleted": source_id})
    messages.success(request, f"Deleted {title}.")
    return _back_to_sources(source)


@login_required
@require_POST
def source_reupload(request: HttpRequest, source_id: int) -> HttpResponse:
    source, membership = selectors.source_for(request.user, source_id)
    if not membership.can_manage:
        return _forbidden(request)
    upload = request.FILES.get("file")
    try:
        if upload is None:
            raise KindError({"file": ["Choose the file to upload again."]})
        ui_services.upload_replace(source=source, upload=upload)
    except services.UploadTooLarge as exc:
        errors, status = {"file": [exc.message]}, 413
    except KindError as exc:
        errors, status = exc.errors, 400
    else:
        if _wants_json(request):
            return JsonResponse({"id": source.id}, status=202)
        messages.success(request, f"{source.title}: uploaded again; it is being indexed.")
        return _back_to_sources(source)
    if _wants_json(request):
        return _errors(request, errors, status)
    messages.error(request, " ".join(m for ms in errors.values() for m in ms))
    return _back_to_sources(source)


@login_required
@require_GET
def source_preview_page(request: HttpRequest, source_id: int) -> HttpResponse:
    source, membership = selectors.source_for(request.user, source_id)
    preview = ui_services.source_preview_titled(source)
    context = _layout(
        request,
        membership,
        agent=source.agent,
        tab="sources",
        row=ui_services.source_row(source),
        preview=preview,
        fragment=request.GET.get("fragment") == "1",
    )
    template = "app/_source_preview_body.html" if context["fragment"] else "app/source_preview.html"
    return render(request, template, context)


# --- testing and configuring an agent ---------------------------------------------------------------------


@login_required
@require_GET
def agent_test(request: HttpRequest, agent_id: int) -> HttpResponse:
    """Ask a question and see the passages the agent would get, with their scores, and the gate's verdict."""
    agent, membership = _agent_page(request, agent_id)
    query = request.GET.get("q", "").strip()[:2000]
    result = ui_services.retrieval_test(agent=agent, query=query) if query else None
    context = _layout(request, membership, agent=agent, tab="test", query=query, result=result)
    return render(request, "app/agent_test.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def agent_settings(request: HttpRequest, agent_id: int) -> HttpResponse:
    agent, membership = _agent_page(request, agent_id)
    if request.method == "POST":
        if not membership.can_manage:
            return _forbidden(request)
        form = AgentSettingsForm(request.POST, instance=agent)
        if form.is_valid():
            form.save()
            messages.success(request, "Settings saved.")
            return redirect("app-agent-settings", agent_id=agent.id)
    else:
        form = AgentSettingsForm(instance=agent)
    if not membership.can_manage:
        for field in form.fields.values():
            field.disabled = True
    host = request.build_absolute_uri("/").rstrip("/")
    context = _layout(
        request,
        membership,
        agent=agent,
        tab="settings",
        form=form,
        snippet=ui_services.widget_snippet(host=host, agent=agent),
        preview_url=reverse("agent-preview-chat", args=[agent.id]),
    )
    return render(request, "app/agent_settings.html", context)
