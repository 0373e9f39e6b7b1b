"""Branch claims as a PL/pgSQL function on PostgreSQL (runtime.store.fanout.branch_claims).

Behind a pooler in transaction mode no statement can stay prepared, so the claim's UPDATE was
parsed and planned on every call, over every partition of the step table. PL/pgSQL keeps the
plan of each statement in a function for the life of the server session, which a pooler keeps
open between the transactions it hands out: called with a short `SELECT`, the claim is planned
once per server connection. Its generic plan is forced: PL/pgSQL would otherwise plan the
first calls for their parameters, and again whenever the generic plan looked costlier, which
took as long as the statement sent whole. Straight to the database the claim stays a prepared
statement, which is as fast. The active run states come as a parameter (from runtime.models);
the step statuses are written out, as a migration must not import them.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

CREATE = """
CREATE OR REPLACE FUNCTION fanfold_claim_branches(
    run_ids uuid[], step_ids uuid[], attempts integer[], owners bigint[], continuing boolean,
    claimed_at timestamptz, lease_until timestamptz, wait_for_flush boolean, active text[]
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
            AND r.status = ANY (active))
        RETURNING s.id, s.attempt, s.name, s.kind, s.input, s.started_at;
    ELSE
        RETURN QUERY
        UPDATE runtime_step s SET status = 'running', attempt = v.attempt,
            started_at = claimed_at, wake_at = lease_until, lease_owner = v.owner
        FROM unnest(run_ids, step_ids, attempts, owners) AS v(run_id, step_id, attempt, owner)
        WHERE s.run_id = v.run_id AND s.id = v.step_id AND s.attempt = v.attempt - 1
        AND (s.status = 'pending' OR (s.status = 'running' AND s.wake_at < claimed_at))
        AND EXISTS (SELECT 1 FROM runtime_run r WHERE r.id = s.run_id
            AND r.status = ANY (active))
        RETURNING s.id, s.attempt, s.name, s.kind, s.input, s.started_at;
    END IF;
END
$$
"""

DROP = (
    "DROP FUNCTION IF EXISTS fanfold_claim_branches("
    "uuid[], uuid[], integer[], bigint[], boolean, timestamptz, timestamptz, boolean, text[])"
)


def create(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def drop(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [
        ("runtime", "0015_partitioned_history"),
    ]

    operations = [migrations.RunPython(create, drop, elidable=False)]
