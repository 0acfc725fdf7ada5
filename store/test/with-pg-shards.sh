#!/usr/bin/env bash
# Runs a command against N throwaway PostgreSQL 15 clusters (the shards of a store),
# then removes them.
#   store/test/with-pg-shards.sh N COMMAND [ARGS...]
# The command sees INLET_PG_SHARDS (N libpq URIs separated by spaces, shard 0 first),
# INLET_PG_BIN (the server's bin dir) and, for shard i, INLET_PG_SHARD<i>_DATA and
# INLET_PG_SHARD<i>_PORT (to stop and start it). INLET_PG_FSYNC=on gives clusters with
# fsync on (durability tests); off by default (synchronous_commit is always on: with it
# off an immediate stop loses the last commits even without an OS crash).
# INLET_PG_REPLICA_SHARD=i gives shard i a streaming replica (pg_basebackup -R, another
# port), synchronous (synchronous_standby_names='*' on the primary: a commit is
# acknowledged once the replica has it, so a failover loses nothing acknowledged); the
# shard's URI then names both hosts, primary first, and the command also sees
# INLET_PG_SHARD<i>_REPLICA_DATA and INLET_PG_SHARD<i>_REPLICA_PORT (to promote it).
set -euo pipefail

N=${1:?usage: with-pg-shards.sh N COMMAND...}
shift
P=${INLET_PG_BIN:-/usr/lib/postgresql/15/bin}
if [ ! -x "$P/initdb" ]; then
  echo "with-pg-shards: $P/initdb not found (run scripts/install-deps.sh)" >&2
  exit 1
fi
T=$(mktemp -d /tmp/inlet-pgshards.XXXXXX)
as_pg() {
  if [ "$(id -u)" = "0" ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
if [ "$(id -u)" = "0" ]; then chown postgres "$T"; fi
chmod 700 "$T"

cleanup() {
  for ((i = 0; i < N; i++)); do
    [ -d "$T/s$i/data" ] && as_pg "$P/pg_ctl" -D "$T/s$i/data" -m immediate -w stop >/dev/null 2>&1 || true
    [ -d "$T/s$i/replica" ] && as_pg "$P/pg_ctl" -D "$T/s$i/replica" -m immediate -w stop >/dev/null 2>&1 || true
  done
  rm -rf "$T"
}
trap cleanup EXIT INT TERM

FSYNC=${INLET_PG_FSYNC:-off}
DSNS=""
for ((i = 0; i < N; i++)); do
  D="$T/s$i"
  mkdir -p "$D"
  if [ "$(id -u)" = "0" ]; then chown postgres "$D"; fi
  as_pg "$P/initdb" -D "$D/data" -U postgres -A trust -E UTF8 --no-locale --no-sync >"$D/initdb.log" 2>&1 \
    || { cat "$D/initdb.log" >&2; exit 1; }
  started=0
  for attempt in 1 2 3 4 5 6 7 8; do
    PORT=$(( 20000 + (RANDOM % 10000) ))
    if as_pg "$P/pg_ctl" -D "$D/data" -l "$D/pg.log" -w -t 30 \
        -o "-c listen_addresses=127.0.0.1 -p $PORT -k $D -c fsync=$FSYNC -c synchronous_commit=on -c max_connections=200 ${INLET_PG_OPTS:-}" \
        start >/dev/null 2>&1; then
      started=1; break
    fi
  done
  if [ $started != 1 ]; then
    echo "with-pg-shards: could not start shard $i" >&2; cat "$D/pg.log" >&2; exit 1
  fi
  export "INLET_PG_SHARD${i}_DATA=$D/data" "INLET_PG_SHARD${i}_PORT=$PORT"
  HOSTS="127.0.0.1:$PORT"
  if [ "${INLET_PG_REPLICA_SHARD:-}" = "$i" ]; then
    as_pg "$P/pg_basebackup" -h 127.0.0.1 -p "$PORT" -U postgres -D "$D/replica" -R -X stream -c fast \
      >"$D/basebackup.log" 2>&1 || { cat "$D/basebackup.log" >&2; exit 1; }
    started=0
    for attempt in 1 2 3 4 5 6 7 8; do
      RPORT=$(( 20000 + (RANDOM % 10000) ))
      [ "$RPORT" = "$PORT" ] && continue
      if as_pg "$P/pg_ctl" -D "$D/replica" -l "$D/replica.log" -w -t 30 \
          -o "-c listen_addresses=127.0.0.1 -p $RPORT -k $D -c fsync=$FSYNC -c synchronous_commit=on -c max_connections=200 ${INLET_PG_OPTS:-}" \
          start >/dev/null 2>&1; then
        started=1; break
      fi
    done
    if [ $started != 1 ]; then
      echo "with-pg-shards: could not start the replica of shard $i" >&2; cat "$D/replica.log" >&2; exit 1
    fi
    as_pg psql -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -qAt \
      -c "ALTER SYSTEM SET synchronous_standby_names = '*'" -c "SELECT pg_reload_conf()" >/dev/null
    export "INLET_PG_SHARD${i}_REPLICA_DATA=$D/replica" "INLET_PG_SHARD${i}_REPLICA_PORT=$RPORT"
    HOSTS="$HOSTS,127.0.0.1:$RPORT"
  fi
  DSNS="$DSNS postgresql://postgres@$HOSTS/postgres"
done
export INLET_PG_SHARDS="${DSNS# }" INLET_PG_BIN="$P"
set +e
"$@"
rc=$?
set -e
exit $rc
