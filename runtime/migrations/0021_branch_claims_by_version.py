"""Branch claims fenced by deployment version (runtime.store.fanout.branch_claims).

`fanfold_claim_branches` takes the versions the claiming process serves: a branch of a run
pinned to another version is claimed by no one there, as its run is not (docs/deploying.md).
It is a second function of that name beside migration 0016's, with the extra `served`
parameter (the rest unchanged): the workers of the release before this one, which call the
old one, keep claiming while a rolling deploy replaces them.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

_BODY = """
CREATE OR REPLACE FUNCTION fanfold_claim_branches(
    run_ids uuid[], step_ids uuid[], attempts integer[], owners bigint[], continuing boolean,
    claimed_at timestamptz, lease_until timestamptz, wait_for_flush boolean, active text[]
    {served}
) RETURNS TABLE (
    id uuid, attempt integer, name varchar, kind varchar, input jsonb, started_at timestamptz
) LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
BEGIN
    IF NOT wait_for_flush THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    IF continuing THEN
        RETURN QUERY
        UPDATE runtime_step s SET wake_at = lease_until, lease_owner = v.owner
        FROM unnest(run_ids, step_ids, attempts, owners) AS v(run_id, step_id, attempt, owner)
        WHERE s.run_id = v.run_id AND s.id = v.step_id
        AND s.status = 'running' AND s.attempt = v.attempt
        AND EXISTS (SELECT 1 FROM runtime_run r WHERE r.id = s.run_id
            AND r.status = ANY (active){pinned})
        RETURNING s.id, s.attempt, s.name, s.kind, s.input, s.started_at;
    ELSE
        RETURN QUERY
        UPDATE runtime_step s SET status = 'running', attempt = v.attempt,
            started_at = claimed_at, wake_at = lease_until, lease_owner = v.owner
        FROM unnest(run_ids, step_ids, attempts, owners) AS v(run_id, step_id, attempt, owner)
        WHERE s.run_id = v.run_id AND s.id = v.step_id AND s.attempt = v.attempt - 1
        AND (s.status = 'pending' OR (s.status = 'running' AND s.wake_at < claimed_at))
        AND EXISTS (SELECT 1 FROM runtime_run r WHERE r.id = s.run_id
            AND r.status = ANY (active){pinned})
        RETURNING s.id, s.attempt, s.name, s.kind, s.input, s.started_at;
    END IF;
END
$$
"""

CREATE = _BODY.format(served=", served text[]", pinned=" AND r.app_version = ANY (served)")
DROP = (
    "DROP FUNCTION IF EXISTS fanfold_claim_branches(uuid[], uuid[], integer[], bigint[], "
    "boolean, timestamptz, timestamptz, boolean, text[], text[])"
)


def create(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def drop(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [
        ("runtime", "0020_search_covering_indexes"),
    ]

    operations = [migrations.RunPython(create, drop, elidable=False)]
