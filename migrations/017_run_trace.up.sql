-- dagen schema, version 17: a run records the trace context of its
-- trigger.
--
-- trace_parent is the W3C traceparent of the span the run was triggered
-- under (engine.Config.TracerProvider, docs/operating.md "Traces"), or NULL
-- when there was none. A claim hands it to the worker with the run's other
-- fields, so every step attempt's span, on any worker, is a child of the
-- trigger's span. A nullable column without a default: adding it rewrites
-- nothing.
ALTER TABLE dagen_runs
    ADD COLUMN trace_parent text;
