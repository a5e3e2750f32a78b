"""Tenancy is fail-closed: every tenant-owned model refuses to be read or written outside a scope."""

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model

from agents.models import Agent
from sources.models import Document, Plan, Source, Workspace
from sources.tenancy import TenancyError, TenantManager, TenantModel, workspace_scope

# Models that are not owned by one workspace, each with the reason.
GLOBAL_MODELS = {
    Workspace: "the tenant itself",
    Plan: "operators' catalogue of limits; a workspace points at one",
    get_user_model(): "a person can belong to several workspaces (through Membership)",
}
# allauth's "account" app holds a person's e-mail addresses, which belong to the person like their user row.
FRAMEWORK_APPS = {"admin", "auth", "contenttypes", "sessions", "account"}


def project_models():
    return [m for m in apps.get_models() if m._meta.app_label not in FRAMEWORK_APPS]


def test_every_project_model_is_tenant_scoped_or_declared_global():
    escaped = []
    for model in project_models():
        if model in GLOBAL_MODELS:
            continue
        if not issubclass(model, TenantModel) or not isinstance(model._default_manager, TenantManager):
            escaped.append(model.__name__)
    assert not escaped, f"models that escape tenancy: {escaped}"
    assert len(project_models()) >= 7  # the walk really sees the project's models


@pytest.mark.django_db
def test_every_tenant_model_refuses_a_query_without_scope():
    tenant_models = [m for m in project_models() if issubclass(m, TenantModel)]
    assert {Source, Document, Agent} <= set(tenant_models)
    for model in tenant_models:
        with pytest.raises(TenancyError):
            list(model.objects.all())
        with pytest.raises(TenancyError):
            model.objects.filter(id=1).exists()
        # The explicit escape hatch exists and works.
        assert model.unscoped.count() >= 0


@pytest.mark.django_db
def test_scope_limits_reads_to_one_workspace(workspace, other_workspace):
    with workspace_scope(workspace.id):
        Agent.objects.create(name="mine")
    with workspace_scope(other_workspace.id):
        Agent.objects.create(name="theirs")
        assert [a.name for a in Agent.objects.all()] == ["theirs"]
    with workspace_scope(workspace.id):
        assert [a.name for a in Agent.objects.all()] == ["mine"]


@pytest.mark.django_db
def test_saving_into_another_workspace_inside_a_scope_is_refused(workspace, other_workspace):
    with workspace_scope(workspace.id), pytest.raises(TenancyError):
        Agent(name="smuggled", workspace=other_workspace).save()
    assert Agent.unscoped.count() == 0


@pytest.mark.django_db
def test_saving_without_any_workspace_is_refused():
    with pytest.raises(TenancyError):
        Agent(name="orphan").save()


def test_scope_requires_an_integer_id():
    with pytest.raises(TenancyError), workspace_scope("1"):  # type: ignore[arg-type]
        pass
