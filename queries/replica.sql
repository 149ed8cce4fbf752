-- name: WALPositions :one
-- The primary's WAL positions, in bytes from 0/0. Once an action has
-- returned, its commit is at or before inserted; flushed is what a standby
-- can have received.
SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint AS inserted,
       pg_wal_lsn_diff(pg_current_wal_flush_lsn(), '0/0')::bigint AS flushed;

-- name: ReplayState :one
-- Whether this server is a standby, how far it has received and replayed
-- the WAL (bytes from 0/0; 0 on a primary) and how many seconds ago it
-- replayed its latest transaction.
SELECT pg_is_in_recovery()::boolean AS standby,
       coalesce(pg_wal_lsn_diff(pg_last_wal_receive_lsn(), '0/0'), 0)::bigint AS received,
       coalesce(pg_wal_lsn_diff(pg_last_wal_replay_lsn(), '0/0'), 0)::bigint AS replayed,
       coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 0)::float8 AS since_xact;
