"""The integrations page (connect and disconnect Notion and Google) and the picker that adds a Notion or
Google Docs source to an agent. Everyone in the workspace sees the connections; owners and admins connect,
disconnect and pick. A connection of another workspace answers 404. The OAuth dance is integrations.oauth's.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from agents.models import Agent
from ingestion import lifecycle
from ingestion.kinds.config import KindError
from ingestion.kinds.registry import all_kinds
from integrations import connections, oauth
from integrations.errors import ProviderError
from integrations.kind import ConnectedKind
from integrations.models import Connection, Provider
from integrations.providers import provider_module
from sources.models import Membership
from sources.quotas import QuotaExceeded
from sources.tenancy import workspace_scope
from sources.web.decorators import for_agent, forbidden, manager_required
from sources.web.lookups import SignedInRequest, membership_or_404
from sources.web.views.common import layout

MANAGERS_ONLY = "Only owners and admins of this workspace can connect accounts and add their pages."


def _provider(name: str) -> Provider:
    try:
        return Provider(name)
    except ValueError:
        raise Http404("No such provider.") from None


def _kind_of(provider: str) -> ConnectedKind:
    return next(k for k in all_kinds() if isinstance(k, ConnectedKind) and k.provider == provider)


def _redirect_uri(request: HttpRequest, provider: str) -> str:
    path = reverse("app-integration-callback", args=[provider])
    base = settings.PUBLIC_BASE_URL.rstrip("/")
    return f"{base}{path}" if base else request.build_absolute_uri(path)


# --- the integrations page ------------------------------------------------------------------------------


@login_required
@require_GET
def integrations_page(request: SignedInRequest) -> HttpResponse:
    membership = membership_or_404(request)
    with workspace_scope(membership.workspace_id):
        rows = []
        for connection in Connection.objects.select_related("connected_by").order_by(
            "provider", "created_at"
        ):
            used_by = connections.connection_sources(connection)
            rows.append({"connection": connection, "sources": len(used_by)})
    providers = [
        {
            "name": provider.value,
            "label": provider.label,
            "configured": provider_module(provider).configured(),
            "kind_label": _kind_of(provider).label,
            "connections": [r for r in rows if r["connection"].provider == provider],
        }
        for provider in Provider
    ]
    context = layout(
        request,
        membership,
        page="integrations",
        providers=providers,
        agents=layout(request, membership)["nav_agents"],
    )
    return render(request, "app/integrations.html", context)


@login_required
@require_POST
def integration_connect(request: SignedInRequest, provider: str) -> HttpResponse:
    membership = membership_or_404(request)
    provider = _provider(provider)
    if not membership.can_manage:
        return forbidden(request, MANAGERS_ONLY)
    if not provider_module(provider).configured():
        messages.error(
            request, f"{provider.label} is not set up on this server yet; ask an operator (README)."
        )
        return redirect("app-integrations")
    url = oauth.begin(
        session=request.session,
        provider=provider,
        workspace_id=membership.workspace_id,
        user_id=request.user.id,
        redirect_uri=_redirect_uri(request, provider),
    )
    return redirect(url)


@login_required
@require_GET
def integration_callback(request: SignedInRequest, provider: str) -> HttpResponse:
    membership = membership_or_404(request)
    provider = _provider(provider)
    if not membership.can_manage:
        return forbidden(request, MANAGERS_ONLY)
    try:
        connection = oauth.finish(
            session=request.session,
            provider=provider,
            state=request.GET.get("state", ""),
            code=request.GET.get("code", ""),
            error=request.GET.get("error", ""),
            workspace_id=membership.workspace_id,
            user=request.user,
        )
    except ProviderError as exc:
        messages.error(request, exc.message)
        return redirect("app-integrations")
    messages.success(request, f"Connected {connection}. Add its pages to an agent from the agent's sources.")
    return redirect("app-integrations")


@login_required
@require_POST
def integration_disconnect(request: SignedInRequest, connection_id: int) -> HttpResponse:
    membership = membership_or_404(request)
    with workspace_scope(membership.workspace_id):
        connection = Connection.objects.filter(id=connection_id).first()
    if connection is None:
        raise Http404("No such connection.")
    if not membership.can_manage:
        return forbidden(request, MANAGERS_ONLY)
    revoked = connections.connection_disconnect(connection=connection)
    note = "" if revoked else f" {connection.get_provider_display()} did not confirm the revocation."
    messages.success(
        request,
        f"Disconnected {connection}. Its sources keep their documents searchable until you delete them; "
        f"they sync again once you reconnect.{note}",
    )
    return redirect("app-integrations")


# --- the picker -----------------------------------------------------------------------------------------


def _connection_for_pick(request: SignedInRequest, agent: Agent, provider: str) -> Connection | None:
    wanted = request.GET.get("connection") or request.POST.get("connection")
    with workspace_scope(agent.workspace_id):
        found = Connection.objects.filter(provider=provider, status=Connection.State.ACTIVE)
        if wanted and str(wanted).isdigit():
            found = found.filter(id=int(wanted))
        return found.order_by("-updated_at").first()


@require_http_methods(["GET", "POST"])
@for_agent
@manager_required
def integration_pick(
    request: SignedInRequest, agent: Agent, membership: Membership, provider: str
) -> HttpResponse:
    provider = _provider(provider)
    kind = _kind_of(provider)
    connection = _connection_for_pick(request, agent, provider)
    context: dict[str, Any] = {"agent": agent, "tab": "sources", "provider": provider, "kind": kind}
    if connection is None:
        context["missing"] = True
        return render(request, "app/integration_pick.html", layout(request, membership, **context))
    if request.method == "POST":
        return _pick_add(request, agent, membership, kind, connection, context)
    query, cursor = request.GET.get("q", "").strip(), request.GET.get("cursor") or None
    try:
        offered, next_cursor = kind.pickable(connection=connection, query=query, cursor=cursor)
    except ProviderError as exc:
        offered, next_cursor, context["error"] = [], None, exc.message
    context.update(connection=connection, offered=offered, next_cursor=next_cursor, query=query)
    return render(request, "app/integration_pick.html", layout(request, membership, **context))


def _pick_add(
    request: SignedInRequest,
    agent: Agent,
    membership: Membership,
    kind: ConnectedKind,
    connection: Connection,
    context: dict[str, Any],
) -> HttpResponse:
    picked = request.POST.getlist("item")  # "type:id:title"
    items = []
    for value in picked:
        item_type, _, rest = value.partition(":")
        item_id, _, title = rest.partition(":")
        items.append({"id": item_id, "type": item_type, "title": title[:300]})
    payload: dict[str, Any] = {"connection": connection.id, "items": items}
    if "include_children" in kind.config_model.model_fields:
        payload["include_children"] = request.POST.get("include_children") == "on"
    try:
        if not items:
            raise KindError({"items": ["Tick at least one page or document."]})
        source = lifecycle.source_create(
            workspace=membership.workspace,
            agent_id=agent.id,
            kind=kind.name,
            title=request.POST.get("title", ""),
            payload=payload,
        )
    except KindError as exc:
        messages.error(request, " ".join(m for ms in exc.errors.values() for m in ms))
        return redirect(f"{reverse('app-integration-pick', args=[agent.id, kind.provider])}")
    except QuotaExceeded as exc:
        messages.error(request, exc.message)
        return redirect(f"{reverse('app-integration-pick', args=[agent.id, kind.provider])}")
    messages.success(request, f"Added {source.title}. It is being synced; this page shows its progress.")
    return redirect("app-agent-sources", agent_id=agent.id)
