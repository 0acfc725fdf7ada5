"""Shared pieces of inlet's end-to-end benchmark scripts (bench/peers, bench/io-models).

Servers are started as child processes bound to 127.0.0.1, stopped by their own PID only,
and every client run is bounded by a message count and a timeout. Works with any python3
(standard library only); plotting lives in plot.py (needs matplotlib).
"""
import json
import os
import platform
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGESIZE")


def repo_root():
    return os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=15.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                s.settimeout(2.0)
                s.recv(64)  # the greeting: the server is really up
                return True
        except OSError:
            time.sleep(0.1)
    return False


def machine():
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"nproc": os.cpu_count(), "cpu": model, "kernel": platform.release(),
            "loadavg_start": os.getloadavg()}


def pinned(cmd, cpus):
    """Prefix cmd with taskset when cpus is set (e.g. "0") and taskset exists."""
    if cpus is None or shutil.which("taskset") is None:
        return cmd
    return ["taskset", "-c", str(cpus)] + cmd


def proc_ticks(pid):
    """(user+sys ticks, rss bytes, threads) of a live process, or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
        return int(rest[11]) + int(rest[12]), int(rest[21]) * PAGE, int(rest[17])
    except (OSError, IndexError, ValueError):
        return None


class Server:
    """A server child process. name is a label; cmd the argv; port where it listens."""

    def __init__(self, name, cmd, port, cpus=None, env=None, cwd=None, startup=20.0):
        self.name, self.port = name, port
        self.log = open(os.devnull, "w")
        self.proc = subprocess.Popen(pinned(cmd, cpus), stdout=self.log, stderr=subprocess.STDOUT,
                                     env=env, cwd=cwd, start_new_session=True)
        self.ok = wait_port(port, startup)
        self.pid = self.proc.pid  # taskset execs the command: the pid stays the server's

    def ticks(self):
        t = proc_ticks(self.pid)
        return t if t else (0, 0, 0)

    def stop(self):
        if self.proc.poll() is None:
            # Only the process group this script created for this server.
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


def run_bounded(cmd, timeout, cpus=None):
    """Runs a client; returns (rc, stdout, wall seconds, client cpu seconds)."""
    t0 = time.monotonic()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.Popen(pinned(cmd, cpus), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return p.returncode, out.decode(errors="replace"), wall, cpu


def measure(server, client_fn):
    """Runs client_fn() -> dict with 'messages', 'seconds' while sampling the server's CPU."""
    t0, rss0, _ = server.ticks()
    r = client_fn()
    t1, rss1, thr = server.ticks()
    r["server_cpu_s"] = (t1 - t0) / CLK_TCK
    r["server_rss_bytes"] = rss1
    r["server_threads"] = thr
    secs = r.get("seconds") or 0
    r["msgs_per_s"] = r["messages"] / secs if secs > 0 else 0.0
    r["server_cpu_us_per_msg"] = 1e6 * r["server_cpu_s"] / r["messages"] if r["messages"] else None
    r["client_cpu_us_per_msg"] = 1e6 * r["client_cpu_s"] / r["messages"] if r["messages"] else None
    return r


def cluster_cpu(data_dir):
    """CPU seconds of a PostgreSQL cluster: its postmaster and every child."""
    try:
        with open(os.path.join(data_dir, "postmaster.pid")) as f:
            pm = int(f.readline())
    except (OSError, ValueError):
        return 0.0
    total = 0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                rest = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(d) == pm or int(rest[1]) == pm:
            total += int(rest[11]) + int(rest[12])
    return total / os.sysconf("SC_CLK_TCK")


def inlet_load(binary, port, args, count, timeout, cpus=None, server_pid=None):
    cmd = [binary, "--target", f"127.0.0.1:{port}", "--count", str(count),
           "--duration", str(timeout), "--json", "--quiet"] + list(args)
    if server_pid:
        cmd += ["--server-pid", str(server_pid)]
    rc, out, wall, cpu = run_bounded(cmd, timeout + 10, cpus)
    try:
        j = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"messages": 0, "seconds": wall, "client_cpu_s": cpu, "error": f"rc={rc}"}
    return {"messages": j["messages_ok"], "failed": j["messages_failed"], "seconds": j["seconds"],
            "client_cpu_s": cpu, "p50_us": j["latency"]["p50_us"], "p99_us": j["latency"]["p99_us"],
            "p999_us": j["latency"]["p999_us"], "max_us": j["latency"]["max_us"],
            "mb_per_s": j["mb_per_s"], "errors": j["errors"], "raw": j}


def smtp_source(port, sessions, count, size, timeout, cpus=None, reuse=True):
    """Postfix's smtp-source: count messages of size bytes over sessions connections."""
    cmd = ["smtp-source", "-s", str(sessions), "-m", str(count), "-l", str(size),
           "-f", "load@inlet.test", "-t", "rcpt@inlet.test"]
    if reuse:
        cmd.append("-d")
    cmd.append(f"127.0.0.1:{port}")
    rc, _, wall, cpu = run_bounded(["timeout", str(timeout)] + cmd, timeout + 10, cpus)
    done = count if rc == 0 else 0
    return {"messages": done, "seconds": wall, "client_cpu_s": cpu,
            "mb_per_s": done * size / 1e6 / wall if wall else 0, **({} if rc == 0 else {"error": f"rc={rc}"})}


def median_spread(values):
    v = [x for x in values if x is not None]
    if not v:
        return None, None, None
    return statistics.median(v), min(v), max(v)


def relativize(obj, root=None):
    """Paths under the repository become relative: committed data names no machine path."""
    root = (root or repo_root()).rstrip("/") + "/"
    if isinstance(obj, str):
        return obj.replace(root, "")
    if isinstance(obj, list):
        return [relativize(x, root) for x in obj]
    if isinstance(obj, dict):
        return {k: relativize(v, root) for k, v in obj.items()}
    return obj


def write_json(path, obj):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(relativize(obj), f, indent=1, sort_keys=True)
        f.write("\n")
