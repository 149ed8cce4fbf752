package pgstore

import (
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// sqlstateReadOnly is read_only_sql_transaction: the server no longer
// accepts writes.
const sqlstateReadOnly = "25006"

// ReconnectWhenReadOnly makes the connections of cfg close themselves
// when their server answers that it does not accept writes (SQLSTATE
// 25006): a primary that was fenced (default_transaction_read_only) or
// demoted while a standby was promoted in its place. The pool then drops
// them and connects again, to whichever host of a multi-host URL with
// target_session_attrs=read-write accepts writes now, instead of failing
// every statement on the connections it holds until they age out. Errors
// that end a session (FATAL, such as admin_shutdown when a server stops)
// still close the connection, as they do by default. [Open] and [OpenPool] do this;
// call it on a config of your own before pgxpool.NewWithConfig.
func ReconnectWhenReadOnly(cfg *pgxpool.Config) {
	next := cfg.ConnConfig.OnPgError
	cfg.ConnConfig.OnPgError = func(c *pgconn.PgConn, err *pgconn.PgError) bool {
		if err.Code == sqlstateReadOnly {
			return false
		}
		if next != nil {
			return next(c, err)
		}
		return true
	}
}
