-- name: InsertElements :exec
-- Creates the elements of mapped tasks (one row per element, for any
-- number of mapped tasks): each gets its mapped task's seq, parents,
-- signature and attempts, and is QUEUED (keeping its QUEUED event in its
-- row) or PENDING, waiting for a slot. The caller holds the runs' locks.
--
-- The mapped tasks come as lists of their own (@run_ids, @maps, @eaches),
-- read once each by primary key; each element names its mapped task by
-- its position there (@map_ords, from 1), so the per-element lists are
-- narrow. Elements go in list order: their QUEUED events take their ids
-- in element order.
WITH clock AS (
    SELECT coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS now
),
maps AS MATERIALIZED (
    SELECT k.ord, k.run_id, k.map, k.each, m.seq, m.parents, m.max_attempts, m.signature,
           m.priority, m.rate_limit, m.rate_key, m.rate_units
    FROM (
        SELECT unnest((SELECT @run_ids::uuid[])) AS run_id,
               unnest((SELECT @maps::text[])) AS map,
               unnest((SELECT @eaches::text[])) AS each,
               generate_series(1, cardinality((SELECT @run_ids::uuid[]))) AS ord
    ) AS k
    CROSS JOIN LATERAL (
        SELECT m.seq, m.parents, m.max_attempts, m.signature, m.priority, m.rate_limit, m.rate_key, m.rate_units FROM dagen_tasks m
        WHERE m.run_id = k.run_id AND m.name = k.map
        LIMIT 1
    ) AS m
)
INSERT INTO dagen_tasks (run_id, name, seq, kind, parents, children, pending_parents, status, max_attempts,
                         signature, each, element, item, queued_event, queued_at,
                         priority, rate_limit, rate_key, rate_units)
SELECT m.run_id, m.map || '[' || x.idx || ']', m.seq, 'element', m.parents, '{}', 0,
       CASE WHEN x.queued THEN 'QUEUED' ELSE 'PENDING' END, m.max_attempts, m.signature, m.each, x.idx, x.item,
       CASE WHEN x.queued THEN nextval('dagen_event_seq') END,
       CASE WHEN x.queued THEN clock.now END,
       m.priority, m.rate_limit, m.rate_key, m.rate_units
FROM (
    SELECT unnest((SELECT @map_ords::integer[])) AS map_ord,
           unnest((SELECT @indexes::integer[])) AS idx,
           unnest((SELECT @items::bytea[])) AS item,
           unnest((SELECT @queued::boolean[])) AS queued
) AS x
JOIN maps m ON m.ord = x.map_ord
CROSS JOIN clock;

-- name: ReuseElements :exec
-- Like InsertElements, for mapped tasks mapped before (a retry reset
-- them): an element that exists is reused, its attempt counting on so that
-- an older attempt's late result stays stale, and its budget starting over.
WITH clock AS (
    SELECT coalesce(sqlc.narg('now')::timestamptz, now())::timestamptz AS now
),
maps AS MATERIALIZED (
    SELECT k.ord, k.run_id, k.map, k.each, m.seq, m.parents, m.max_attempts, m.signature,
           m.priority, m.rate_limit, m.rate_key, m.rate_units
    FROM (
        SELECT unnest((SELECT @run_ids::uuid[])) AS run_id,
               unnest((SELECT @maps::text[])) AS map,
               unnest((SELECT @eaches::text[])) AS each,
               generate_series(1, cardinality((SELECT @run_ids::uuid[]))) AS ord
    ) AS k
    CROSS JOIN LATERAL (
        SELECT m.seq, m.parents, m.max_attempts, m.signature, m.priority, m.rate_limit, m.rate_key, m.rate_units FROM dagen_tasks m
        WHERE m.run_id = k.run_id AND m.name = k.map
        LIMIT 1
    ) AS m
)
INSERT INTO dagen_tasks AS t (run_id, name, seq, kind, parents, children, pending_parents, status, max_attempts,
                              signature, each, element, item, queued_event, queued_at,
                         priority, rate_limit, rate_key, rate_units)
SELECT m.run_id, m.map || '[' || x.idx || ']', m.seq, 'element', m.parents, '{}', 0,
       CASE WHEN x.queued THEN 'QUEUED' ELSE 'PENDING' END, m.max_attempts, m.signature, m.each, x.idx, x.item,
       CASE WHEN x.queued THEN nextval('dagen_event_seq') END,
       CASE WHEN x.queued THEN clock.now END,
       m.priority, m.rate_limit, m.rate_key, m.rate_units
FROM (
    SELECT unnest((SELECT @map_ords::integer[])) AS map_ord,
           unnest((SELECT @indexes::integer[])) AS idx,
           unnest((SELECT @items::bytea[])) AS item,
           unnest((SELECT @queued::boolean[])) AS queued
) AS x
JOIN maps m ON m.ord = x.map_ord
CROSS JOIN clock
ON CONFLICT (run_id, name) DO UPDATE
SET status = excluded.status,
    parents = excluded.parents,
    signature = excluded.signature,
    each = excluded.each,
    item = excluded.item,
    max_attempts = t.attempt + excluded.max_attempts,
    output = NULL,
    error = '',
    reason = '',
    wake_at = NULL,
    finished_at = NULL,
    queued_event = excluded.queued_event,
    queued_at = excluded.queued_at,
    started_event = NULL,
    started_at = NULL,
    completed_event = NULL;

-- name: QueueElements :many
-- Marks PENDING elements QUEUED, keeping their QUEUED event in their rows:
-- the next ones of mapped tasks whose earlier elements resolved. The
-- caller holds the runs' locks. One lookup a key, as in DecrementChildren;
-- the key stays the condition, since a ctid names a row in every range of
-- the table, and the ctid list only narrows the scan.
UPDATE dagen_tasks t
SET status = 'QUEUED',
    queued_event = nextval('dagen_event_seq'),
    queued_at = coalesce(sqlc.narg('now')::timestamptz, now())
FROM (SELECT unnest((SELECT @run_ids::uuid[])) AS run_id, unnest((SELECT @names::text[])) AS name) AS k0
WHERE t.run_id = k0.run_id AND t.name = k0.name AND t.status = 'PENDING'
  AND t.ctid = ANY(ARRAY(
      SELECT x.ctid
      FROM (SELECT unnest((SELECT @run_ids::uuid[])) AS run_id, unnest((SELECT @names::text[])) AS name) AS k
      CROSS JOIN LATERAL (
          SELECT t2.ctid FROM dagen_tasks t2 WHERE t2.run_id = k.run_id AND t2.name = k.name LIMIT 1
      ) AS x
  ))
RETURNING t.run_id, t.name, t.signature, t.queued_event;

-- name: UpdateMapTasks :exec
-- Writes the mapping state of mapped tasks (see migration 004): how many
-- elements, how many are unresolved, the next to queue and the limit. It
-- goes with UpdateTasks, which writes their status.
UPDATE dagen_tasks t
SET elements = u.elements,
    pending_parents = u.pending,
    next_element = u.next_element,
    map_limit = u.map_limit
FROM (
    SELECT unnest((SELECT @run_ids::uuid[])) AS run_id,
           unnest((SELECT @names::text[])) AS name,
           unnest((SELECT @elements::integer[])) AS elements,
           unnest((SELECT @pendings::integer[])) AS pending,
           unnest((SELECT @next_elements::integer[])) AS next_element,
           unnest((SELECT @map_limits::integer[])) AS map_limit
) AS u
WHERE t.run_id = u.run_id AND t.name = u.name;

-- name: ElementOutputs :many
-- The outputs of a mapped task's first n elements, in element order: what
-- it completes with when the last one resolves.
SELECT t.element::integer AS element, t.output
FROM dagen_tasks t
WHERE t.run_id = @run_id
  AND t.kind = 'element'
  AND starts_with(t.name, @prefix::text)
  AND t.element < @n::integer
ORDER BY t.element;
