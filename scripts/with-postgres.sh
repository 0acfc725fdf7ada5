#!/usr/bin/env bash
# Runs a command against a throwaway PostgreSQL 15 cluster, then removes the cluster.
#   scripts/with-postgres.sh COMMAND [ARGS...]
# The command sees INLET_PG_DSN (a libpq URI), PGHOST/PGPORT/PGUSER/PGDATABASE and
# INLET_PG_BIN (the server's bin dir, for tests that stop and start the server) and
# INLET_PG_DATA. Set INLET_PG_FSYNC=on for durability tests (fsync off by default).
# Set INLET_PG_SSL=on for a cluster with TLS (a throwaway self-signed certificate made
# with openssl); the DSN then carries sslmode=require.
# Set INLET_PG_REPLICA=on for a streaming replica as well (pg_basebackup -R of the
# primary, started on another port): the command also sees INLET_PG_REPLICA_PORT,
# INLET_PG_REPLICA_DATA and INLET_PG_CLUSTER_DSN (both hosts, primary first).
set -euo pipefail

P=${INLET_PG_BIN:-/usr/lib/postgresql/15/bin}
if [ ! -x "$P/initdb" ]; then
  echo "with-postgres: $P/initdb not found (run scripts/install-deps.sh)" >&2
  exit 1
fi

T=$(mktemp -d /tmp/inlet-pg.XXXXXX)
as_pg() {
  if [ "$(id -u)" = "0" ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
if [ "$(id -u)" = "0" ]; then chown postgres "$T"; fi
chmod 700 "$T"

cleanup() {
  as_pg "$P/pg_ctl" -D "$T/data" -m immediate -w stop >/dev/null 2>&1 || true
  if [ -d "$T/replica" ]; then as_pg "$P/pg_ctl" -D "$T/replica" -m immediate -w stop >/dev/null 2>&1 || true; fi
  rm -rf "$T"
}
trap cleanup EXIT INT TERM

as_pg "$P/initdb" -D "$T/data" -U postgres -A trust -E UTF8 --no-locale --no-sync >"$T/initdb.log" 2>&1 \
  || { cat "$T/initdb.log" >&2; exit 1; }

FSYNC=${INLET_PG_FSYNC:-off}
SSL_OPTS=""
DSN_QUERY=""
if [ "${INLET_PG_SSL:-off}" = "on" ]; then
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=127.0.0.1" \
    -keyout "$T/server.key" -out "$T/server.crt" >"$T/openssl.log" 2>&1 \
    || { cat "$T/openssl.log" >&2; exit 1; }
  chmod 600 "$T/server.key"
  if [ "$(id -u)" = "0" ]; then chown postgres "$T/server.key" "$T/server.crt"; fi
  SSL_OPTS="-c ssl=on -c ssl_cert_file=$T/server.crt -c ssl_key_file=$T/server.key"
  DSN_QUERY="?sslmode=require"
fi
started=0
for attempt in 1 2 3 4 5 6 7 8; do
  PORT=$(( 20000 + (RANDOM % 10000) ))
  if as_pg "$P/pg_ctl" -D "$T/data" -l "$T/pg.log" -w -t 30 \
      -o "-c listen_addresses=127.0.0.1 -p $PORT -k $T -c fsync=$FSYNC -c max_connections=200 $SSL_OPTS" \
      start >/dev/null 2>&1; then
    started=1; break
  fi
done
if [ $started != 1 ]; then
  echo "with-postgres: could not start PostgreSQL" >&2; cat "$T/pg.log" >&2; exit 1
fi

if [ "${INLET_PG_REPLICA:-off}" = "on" ]; then
  as_pg "$P/pg_basebackup" -h 127.0.0.1 -p "$PORT" -U postgres -D "$T/replica" -R -X stream -c fast >"$T/basebackup.log" 2>&1 \
    || { cat "$T/basebackup.log" >&2; exit 1; }
  started=0
  for attempt in 1 2 3 4 5 6 7 8; do
    RPORT=$(( 20000 + (RANDOM % 10000) ))
    [ "$RPORT" = "$PORT" ] && continue
    if as_pg "$P/pg_ctl" -D "$T/replica" -l "$T/replica.log" -w -t 30 \
        -o "-c listen_addresses=127.0.0.1 -p $RPORT -k $T -c fsync=$FSYNC -c max_connections=200 $SSL_OPTS" \
        start >/dev/null 2>&1; then
      started=1; break
    fi
  done
  if [ $started != 1 ]; then
    echo "with-postgres: could not start the replica" >&2; cat "$T/replica.log" >&2; exit 1
  fi
  export INLET_PG_REPLICA_PORT=$RPORT INLET_PG_REPLICA_DATA="$T/replica"
  export INLET_PG_CLUSTER_DSN="postgresql://postgres@127.0.0.1:$PORT,127.0.0.1:$RPORT/postgres$DSN_QUERY"
fi

export PGHOST=127.0.0.1 PGPORT=$PORT PGUSER=postgres PGDATABASE=postgres
export INLET_PG_DSN="postgresql://postgres@127.0.0.1:$PORT/postgres$DSN_QUERY"
export INLET_PG_BIN="$P" INLET_PG_DATA="$T/data" INLET_PG_SOCKDIR="$T"
set +e
"$@"
rc=$?
set -e
exit $rc
