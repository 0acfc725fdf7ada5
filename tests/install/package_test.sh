#!/usr/bin/env bash
# The Debian packages as an operator and a developer use them:
#   1. build them from BUILD_DIR (scripts/build-deb.sh);
#   2. dpkg -i inlet: the system user, the unit and /etc/inlet/inletd.conf are in place;
#   3. start the installed inletd as the unit would (systemd does not run here: the
#      unit's ExecStart, as its User=), with INLET_SMTP/INLET_LISTEN moving it to free
#      ports; send a message with smtplib and read it back over HTTP;
#   4. dpkg -i libinlet-dev and build the consumer project against /usr;
#   5. purge both: no file, no user left.
# Prints the installed size and the time from dpkg -i to the first stored message.
# Needs root and dpkg; exits 77 (skipped) without them or when a package named inlet is
# already installed (this test never touches an installation it did not make).
#   tests/install/package_test.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)

if [ "$(id -u)" != 0 ] || ! command -v dpkg >/dev/null; then
  echo "package_test: skipped (needs root and dpkg)"
  exit 77
fi
for p in inlet libinlet-dev; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
    echo "package_test: skipped ($p is installed on this machine; not touching it)"
    exit 77
  fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/inlet-package.XXXXXX")
pid=""
installed=0
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi
  if [ $installed = 1 ]; then dpkg --purge inlet libinlet-dev >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

INLET_DEB_NO_BUILD=1 "$root/scripts/build-deb.sh" "$build" >/dev/null
deb=$(ls "$build"/packages/inlet_*.deb)
devdeb=$(ls "$build"/packages/libinlet-dev_*.deb)

# The libraries inletd opens at their first use (docs/architecture.md) are dependencies
# dpkg-shlibdeps cannot see: the package must name them itself.
depends=$(dpkg-deb -f "$deb" Depends)
for p in libcurl4 libgraphicsmagick-q16-3; do
  case ", $depends," in *", $p,"*|*", $p "*) ;; *)
    echo "package_test: $p missing from Depends: $depends" >&2; exit 1;;
  esac
done

# 2. Install.
start_ns=$(date +%s%N)
installed=1
dpkg -i "$deb" >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log" >&2; exit 1; }
test -x /usr/bin/inletd && test -f /etc/inlet/inletd.conf && test -f /lib/systemd/system/inletd.service
# sendmail for PHP's sendmail_path: the same program under Mailpit's subcommand name.
[ "$(readlink -f /usr/lib/inlet/sendmail)" = "$(readlink -f /usr/bin/inletd)" ]
getent passwd inlet >/dev/null || { echo "package_test: no system user inlet" >&2; exit 1; }
dpkg-query -W -f='${Conffiles}\n' inlet | grep -q /etc/inlet/inletd.conf
if command -v systemd-analyze >/dev/null; then
  # Offline check of the unit's syntax and hardening keys (no running systemd needed).
  systemd-analyze verify /lib/systemd/system/inletd.service >"$work/verify.log" 2>&1 \
    || { cat "$work/verify.log" >&2; exit 1; }
fi

# 3. Run the installed binary the way the unit does, as its user, with its config.
exec_start=$(sed -n 's/^ExecStart=//p' /lib/systemd/system/inletd.service)
user=$(sed -n 's/^User=//p' /lib/systemd/system/inletd.service)
: >"$work/inletd.log"  # exists before the background child opens it
INLET_SMTP=127.0.0.1:0 INLET_LISTEN=127.0.0.1:0 runuser -u "$user" -- $exec_start \
  >"$work/inletd.log" 2>&1 &
pid=$!
/usr/bin/python3 - "$work/inletd.log" <<'PY'
import json, smtplib, sys, time, urllib.request
log = sys.argv[1]
smtp = http = None
deadline = time.time() + 20
while time.time() < deadline and not (smtp and http):
    for line in open(log):
        if "smtp listening on" in line:
            smtp = line.rsplit(" ", 1)[1].strip()
        if "http listening on" in line:
            http = line.split(" listening on ", 1)[1].split()[0]
    time.sleep(0.05)
if not (smtp and http):
    sys.exit("package_test: inletd did not start: " + open(log).read())
host, port = smtp.rsplit(":", 1)
raw = b"From: a@example.org\r\nTo: box@example.com\r\nSubject: installed\r\n\r\nfrom the package\r\n"
with smtplib.SMTP(host, int(port), timeout=10) as s:
    s.sendmail("a@example.org", ["box@example.com"], raw)
with urllib.request.urlopen(f"http://{http}/api/v1/messages", timeout=10) as r:
    msgs = json.load(r)["messages"]
assert len(msgs) == 1 and msgs[0]["Subject"] == "installed", msgs
with urllib.request.urlopen(f"http://{http}/api/v1/message/{msgs[0]['ID']}/raw", timeout=10) as r:
    assert r.read() == raw
PY
first_ns=$(date +%s%N)
kill -TERM "$pid"
wait "$pid" || true
pid=""
size_kib=$(dpkg-query -W -f='${Installed-Size}' inlet)

# 4. The development package: headers and the CMake package under /usr.
dpkg -i "$devdeb" >"$work/dpkg-dev.log" 2>&1 || { cat "$work/dpkg-dev.log" >&2; exit 1; }
cmake -S "$here/consumer" -B "$work/consumer" -G Ninja -DCOMPONENT=mime >"$work/consumer.log" 2>&1 \
  && cmake --build "$work/consumer" >>"$work/consumer.log" 2>&1 \
  && "$work/consumer/mime_consumer" >>"$work/consumer.log" \
  || { cat "$work/consumer.log" >&2; exit 1; }

# 5. Purge: nothing of ours is left behind.
dpkg --purge inlet libinlet-dev >"$work/purge.log" 2>&1 || { cat "$work/purge.log" >&2; exit 1; }
installed=0
for f in /usr/bin/inletd /usr/lib/inlet/sendmail /etc/inlet /lib/systemd/system/inletd.service /usr/include/inlet \
         /usr/lib/cmake/inlet /var/lib/inlet; do
  if [ -e "$f" ]; then echo "package_test: $f is left after purge" >&2; exit 1; fi
done
if getent passwd inlet >/dev/null; then echo "package_test: user inlet left after purge" >&2; exit 1; fi

echo "package_test: installed size ${size_kib} KiB; dpkg -i to first stored message $(( (first_ns - start_ns) / 1000000 )) ms"
