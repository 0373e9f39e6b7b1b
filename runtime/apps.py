"""The runtime app: registers checks, imports every workflow module, wires the dispatcher."""

from __future__ import annotations

import importlib
import sys

from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules

from runtime.observe.switches import configure as configure_observability


class RuntimeConfig(AppConfig):
    name = "runtime"
    verbose_name = "Fanfold runtime"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported here, not at module level: these modules need the app registry ready.
        from runtime import checks, conf, dispatch, django_tasks, embedded
        from runtime.registry import versions
        from runtime.versions import routing as version_routing

        # With the `memory://` broker every send first makes sure the in-process worker runs;
        # a Django task's run goes to its task's queue; a run's messages go to its version's
        # variant of their queue (runtime.versions.routing).
        routing = django_tasks.run_routing()
        dispatch.install(
            dispatch.CeleryDispatcher(
                before_send=embedded.ensure_worker,
                route=routing,
                version=version_routing.version_of,
            )
        )
        autodiscover_modules("workflows")
        django_tasks.install()  # the Django Tasks workflow, where TASKS uses Fanfold's backend
        try:
            settings = conf.get()
        except conf.SettingsError:
            settings = conf.FanfoldSettings()  # reported by the system check
        configure_observability(metrics_enabled=settings.METRICS, tracing_enabled=settings.TRACING)
        modules = settings.WORKFLOW_MODULES
        for module in modules:
            importlib.import_module(module)
        if "gunicorn.arbiter" in sys.modules:  # a gunicorn web process loading the site
            checks.log_static_collection_problems("Web process")
        versions.freeze()  # the default version: the source of the modules registered now
