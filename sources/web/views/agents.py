"""The admin UI's pages about agents: the workspace's home, a new agent, its settings, test retrieval,
health and deletion. Everyone in a workspace sees them; only owners and admins change anything."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Sum
from django.db.models.functions import Coalesce
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from agents import doctor
from agents import services as agent_services
from agents.models import Agent
from sources import selectors
from sources.models import EMBEDDING_DIMENSIONS, Membership, Source
from sources.quotas import QuotaExceeded
from sources.tenancy import workspace_scope
from sources.web import agent_presenters
from sources.web.agent_forms import AgentSettingsPageForm
from sources.web.decorators import for_agent, forbidden, manager_required
from sources.web.lookups import SignedInRequest, current_membership, membership_or_404
from sources.web.views.common import layout


@login_required
@require_GET
def app_home(request: SignedInRequest) -> HttpResponse:
    membership = current_membership(request)
    if membership is None:
        return redirect("app-welcome")  # create a workspace or accept an invitation
    overview = agent_presenters.agents_overview(membership.workspace_id)
    return render(request, "app/home.html", layout(request, membership, overview=overview))


@login_required
@require_POST
def workspace_switch(request: SignedInRequest) -> HttpResponse:
    chosen = request.POST.get("workspace", "")
    membership = selectors.membership_in(request.user, int(chosen)) if chosen.isdigit() else None
    if membership is None:
        raise Http404("You are not a member of that workspace.")
    request.session["workspace_id"] = membership.workspace_id
    return redirect("app-home")


@login_required
@require_POST
def agent_new(request: SignedInRequest) -> HttpResponse:
    membership = membership_or_404(request)
    if not membership.can_manage:
        return forbidden(request)
    name = request.POST.get("name", "").strip()
    if not name:
        messages.error(request, "Give the agent a name.")
        return redirect("app-home")
    try:
        agent = agent_services.agent_create(workspace=membership.workspace, name=name)
    except QuotaExceeded as exc:
        messages.error(request, exc.message)
        return redirect("app-home")
    return redirect("app-agent-sources", agent_id=agent.id)


@require_http_methods(["GET", "POST"])
@for_agent
@manager_required
def agent_delete(request: SignedInRequest, agent: Agent, membership: Membership) -> HttpResponse:
    """GET: what goes with the agent; POST: delete it, once its name is typed back."""
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
    context = layout(request, membership, agent=agent, tab="settings", counts=counts, error=error)
    return render(request, "app/agent_delete.html", context, status=status)


@login_required
@require_GET
def agent_home(request: SignedInRequest, agent_id: int) -> HttpResponse:
    return redirect("app-agent-sources", agent_id=agent_id)


@require_GET
@for_agent
def agent_test(request: SignedInRequest, agent: Agent, membership: Membership) -> HttpResponse:
    """Ask a question and see the passages the agent would get, with their scores, and the gate's verdict."""
    query = request.GET.get("q", "").strip()[:2000]
    result = agent_presenters.retrieval_test(agent=agent, query=query) if query else None
    context = layout(request, membership, agent=agent, tab="test", query=query, result=result)
    return render(request, "app/agent_test.html", context)


@require_GET
@for_agent
def agent_health(request: SignedInRequest, agent: Agent, membership: Membership) -> HttpResponse:
    """The doctor's findings for this agent and the deployment; everyone in the workspace may look."""
    report = doctor.diagnose(agent=agent)
    return render(
        request,
        "app/agent_health.html",
        layout(request, membership, agent=agent, tab="health", report=report),
    )


@require_http_methods(["GET", "POST"])
@for_agent
def agent_settings(request: SignedInRequest, agent: Agent, membership: Membership) -> HttpResponse:
    if request.method == "POST":
        if not membership.can_manage:
            return forbidden(request)
        form = AgentSettingsPageForm(request.POST, instance=agent)
        if form.is_valid():
            form.save()
            messages.success(request, "Settings saved.")
            return redirect("app-agent-settings", agent_id=agent.id)
    else:
        form = AgentSettingsPageForm(instance=agent)
    if not membership.can_manage:
        for field in form.fields.values():
            field.disabled = True
    host = request.build_absolute_uri("/").rstrip("/")
    context = layout(
        request,
        membership,
        agent=agent,
        tab="settings",
        form=form,
        snippet=agent_presenters.widget_snippet(host=host, agent=agent),
        preview_url=reverse("agent-preview-chat", args=[agent.id]),
        auto_sources_per_hour=settings.AUTO_SOURCES_PER_HOUR,
        embedding_dimensions=EMBEDDING_DIMENSIONS,
    )
    return render(request, "app/agent_settings.html", context)
