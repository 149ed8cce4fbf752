#!/usr/bin/env bash
# make bench-shards: dagen's single_step and chain10 (tuned as in make
# bench) on Postgres clusters of their own, made here with initdb: on one
# cluster through a plain pgstore, then through a sharded store
# (shardstore) over 1, 2 and 3 clusters, in ROUNDS interleaved rounds; then
# each round's steps/s and CPU per step against the plain pgstore's.
# On one machine the clusters share its cores: the figures show what
# sharding costs, not how it scales.
# Usage: run.sh DAGEN_BENCH OUT_DIR ROUNDS [dagen-bench flags...]
# The clusters take free ports from SHARD_PORT (15432) up, settings as the
# Debian cluster's defaults (shared_buffers 128MB, fsync on), and are
# removed at the end.
set -euo pipefail
bin=$1 out=$2 rounds=$3
shift 3
initdb=$(ls -d /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -n1)
if [ -z "$initdb" ]; then
	echo "bench-shards: no initdb under /usr/lib/postgresql/*/bin: install Debian's postgresql package" >&2
	exit 1
fi
pgbin=$(dirname "$initdb")
mkdir -p "$out"
dir=$(mktemp -d)
run_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() {
	for c in "$dir"/c*; do
		[ -f "$c/postmaster.pid" ] && run_pg "$pgbin/pg_ctl" -D "$c" stop -m immediate -w >/dev/null 2>&1 || true
	done
	rm -rf "$dir"
}
trap cleanup EXIT
[ "$(id -u)" = 0 ] && chown postgres "$dir"
port=${SHARD_PORT:-15432}
urls=()
for i in 1 2 3; do
	while (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done
	c="$dir/c$i"
	run_pg "$initdb" -D "$c" -U postgres -A trust --no-sync >/dev/null
	cat >>"$c/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
shared_buffers = 128MB
max_connections = 100
CONF
	run_pg "$pgbin/pg_ctl" -D "$c" -l "$dir/log$i" -w start >/dev/null
	urls+=("postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable")
	port=$((port + 1))
done
configs=(pgstore shards1 shards2 shards3)
for r in $(seq 1 "$rounds"); do
	for cfg in "${configs[@]}"; do
		echo "bench-shards: round $r of $rounds: $cfg"
		case $cfg in
		pgstore) where=(-database-url "${urls[0]}") ;;
		shards1) where=(-shards "a=${urls[0]}") ;;
		shards2) where=(-shards "a=${urls[0]} b=${urls[1]}") ;;
		shards3) where=(-shards "a=${urls[0]} b=${urls[1]} c=${urls[2]}") ;;
		esac
		"$bin" "${where[@]}" -tenants 30 -workloads single_step,chain10 "$@" -json-out "$out/$cfg-$r.jsonl"
	done
done
field() { sed -n "s/.*\"workload\":\"$2\".*\"$3\":\([0-9.]*\).*/\1/p" "$1" | head -n1; }
echo
echo "steps/s, CPU µs/step (worker and every postgres process) and their ratios to the plain pgstore's of the same round"
printf '%-12s %5s %-8s %10s %8s %10s %8s\n' workload round store steps/s ratio cpu_us ratio
for w in single_step chain10; do
	for r in $(seq 1 "$rounds"); do
		base=$(field "$out/pgstore-$r.jsonl" "$w" steps_per_sec)
		basecpu=$(field "$out/pgstore-$r.jsonl" "$w" cpu_us_per_step)
		for cfg in "${configs[@]}"; do
			s=$(field "$out/$cfg-$r.jsonl" "$w" steps_per_sec)
			c=$(field "$out/$cfg-$r.jsonl" "$w" cpu_us_per_step)
			awk -v w="$w" -v r="$r" -v cfg="$cfg" -v s="$s" -v b="$base" -v c="$c" -v bc="$basecpu" \
				'BEGIN { printf "%-12s %5d %-8s %10.0f %8.2f %10.1f %8.2f\n", w, r, cfg, s, s / b, c, c / bc }'
		done
	done
done
