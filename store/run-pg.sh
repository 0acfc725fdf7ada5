#!/usr/bin/env bash
# `make run-pg`: inletd with the PostgreSQL store on a local cluster kept under the build
# folder (BUILD/pgdata, created on first use, fsync on), started for the run and stopped
# when inletd stops; the mail stays for the next run.
#   store/run-pg.sh BUILD SMTP HTTP [PORT]
set -euo pipefail
BUILD=${1:?build dir}
SMTP=${2:-127.0.0.1:1025}
HTTP=${3:-127.0.0.1:8025}
PORT=${4:-55432}
P=${INLET_PG_BIN:-/usr/lib/postgresql/15/bin}
D=$(cd "$BUILD" && pwd)/pgdata
as_pg() {
  if [ "$(id -u)" = "0" ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
if [ ! -x "$P/initdb" ]; then
  echo "run-pg: $P/initdb not found (scripts/install-deps.sh installs postgresql-15)" >&2
  exit 1
fi
if [ ! -f "$D/data/PG_VERSION" ]; then
  mkdir -p "$D"
  if [ "$(id -u)" = "0" ]; then chown postgres "$D"; fi
  chmod 700 "$D"
  echo "run-pg: creating a PostgreSQL cluster in $D/data"
  as_pg "$P/initdb" -D "$D/data" -U postgres -A trust -E UTF8 --no-locale >"$D/initdb.log" 2>&1 \
    || { cat "$D/initdb.log" >&2; exit 1; }
fi
started=0
if ! as_pg "$P/pg_ctl" -D "$D/data" status >/dev/null 2>&1; then
  as_pg "$P/pg_ctl" -D "$D/data" -l "$D/pg.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $PORT -k $D -c fsync=on -c synchronous_commit=on" start >/dev/null \
    || { tail -20 "$D/pg.log" >&2; exit 1; }
  started=1
fi
stop() {
  if [ $started = 1 ]; then as_pg "$P/pg_ctl" -D "$D/data" -m fast -w stop >/dev/null 2>&1 || true; fi
}
trap stop EXIT
URI="postgresql://postgres@127.0.0.1:$PORT/postgres"
echo ""
echo "inletd: SMTP on $SMTP, HTTP on http://$HTTP/ (PostgreSQL store: $URI, data in $D)"
echo "  send:  swaks --server $SMTP --to someone@example.com"
echo "  list:  curl http://$HTTP/api/v1/messages"
echo ""
set +e
"$BUILD/bin/inletd" --smtp "$SMTP" --listen "$HTTP" --store "$URI" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null' INT TERM
wait $pid
rc=$?
wait $pid 2>/dev/null
exit $rc
