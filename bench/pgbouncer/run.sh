#!/usr/bin/env bash
# make bench-pgbouncer: dagen's throughput workloads (single_step, chain10,
# fan50, tuned as in make bench) straight to Postgres and through PgBouncer
# in transaction mode (with a direct session URL for LISTEN), in ROUNDS
# interleaved rounds, then each round's ratio, through PgBouncer ÷ direct.
# Usage: run.sh DAGEN_BENCH OUT_DIR ROUNDS [dagen-bench flags...]
# The server is 127.0.0.1:5432 (PGB_SERVER_PORT to change the port);
# PgBouncer (Debian's package) listens on PGB_PORT (16432).
set -euo pipefail
bin=$1 out=$2 rounds=$3
shift 3
server_port=${PGB_SERVER_PORT:-5432}
port=${PGB_PORT:-16432}
direct="postgres://postgres@127.0.0.1:${server_port}/postgres?sslmode=disable"
pooled="postgres://postgres@127.0.0.1:${port}/dagen_bench?sslmode=disable"
mkdir -p "$out"
dir=$(mktemp -d)
trap 'kill "$(cat "$dir/pgbouncer.pid" 2>/dev/null)" 2>/dev/null || true; rm -rf "$dir"' EXIT
cat > "$dir/pgbouncer.ini" <<INI
[databases]
dagen_bench = host=127.0.0.1 port=${server_port} dbname=postgres connect_query='SET search_path = dagen_bench_pgb'

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${port}
unix_socket_dir =
auth_type = trust
auth_file = ${dir}/userlist.txt
pool_mode = transaction
default_pool_size = 20
max_client_conn = 200
logfile = ${dir}/pgbouncer.log
pidfile = ${dir}/pgbouncer.pid
INI
echo '"postgres" ""' > "$dir/userlist.txt"
user=()
if [ "$(id -u)" = 0 ]; then chown -R postgres "$dir"; user=(-u postgres); fi
pgbouncer -d "${user[@]}" "$dir/pgbouncer.ini"
for _ in $(seq 1 50); do pg_isready -q -h 127.0.0.1 -p "$port" && break; sleep 0.1; done
for r in $(seq 1 "$rounds"); do
	echo "bench-pgbouncer: round $r of $rounds: direct"
	"$bin" -database-url "$direct" -workloads single_step,chain10,fan50 "$@" -json-out "$out/direct-$r.jsonl"
	echo "bench-pgbouncer: round $r of $rounds: through PgBouncer"
	"$bin" -database-url "$pooled" -pooler -session-url "$direct" -schema dagen_bench_pgb \
		-workloads single_step,chain10,fan50 "$@" -json-out "$out/pgbouncer-$r.jsonl"
done
field() { sed -n "s/.*\"workload\":\"$2\".*\"$3\":\([0-9.]*\).*/\1/p" "$1" | head -n1; }
echo
printf '%-12s %5s %12s %12s %7s %14s\n' workload round direct/s pgbouncer/s ratio cpu_us_d/p
for w in single_step chain10 fan50; do
	for r in $(seq 1 "$rounds"); do
		d=$(field "$out/direct-$r.jsonl" "$w" steps_per_sec)
		p=$(field "$out/pgbouncer-$r.jsonl" "$w" steps_per_sec)
		cd=$(field "$out/direct-$r.jsonl" "$w" cpu_us_per_step)
		cp=$(field "$out/pgbouncer-$r.jsonl" "$w" cpu_us_per_step)
		awk -v w="$w" -v r="$r" -v d="$d" -v p="$p" -v cd="$cd" -v cp="$cp" \
			'BEGIN { printf "%-12s %5d %12.0f %12.0f %7.2f %9s/%s\n", w, r, d, p, p / d, cd, cp }'
	done
done
