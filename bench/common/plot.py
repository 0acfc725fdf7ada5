"""PNG plots for the benchmark scripts (matplotlib; Debian python3-matplotlib via /usr/bin/python3)."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def _save(fig, path, machine):
    fig.text(0.01, 0.01, f"{machine.get('nproc')} CPUs, {machine.get('cpu', '')}, load avg "
             f"{machine.get('loadavg_start', [0])[0]:.1f}", fontsize=7, color="gray")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_peers(out, path):
    """Throughput vs connections, one line per peer (inlet-load rows of bench/peers/run.py)."""
    rows = [r for r in out["summary"] if r.get("connections")]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for peer in dict.fromkeys(r["peer"] for r in rows):
        pts = sorted((r["connections"], r["msgs_per_s"]) for r in rows if r["peer"] == peer and r["msgs_per_s"])
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=peer)
    ax.set_xscale("log")
    ax.set_xlabel("connections (closed loop, pipelining, ~9 KB messages)")
    ax.set_ylabel("messages/s (median of rounds)")
    ax.set_title("inletd beside its peers, same client (inlet-load)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    _save(fig, path, out["machine"])


def plot_latency_vs_rate(out, path, title=None):
    """Latency percentiles vs offered load (open loop rows: 'rate', 'p50_us', 'p99_us', 'peer')."""
    rows = out["open_loop"]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for k, peer in enumerate(dict.fromkeys(r["peer"] for r in rows)):
        pts = sorted((r["rate"], r["p50_us"], r["p99_us"]) for r in rows if r["peer"] == peer)
        color = f"C{k}"  # one colour per peer: p50 solid, p99 dashed
        ax.plot([p[0] for p in pts], [p[1] / 1000 for p in pts], marker="o", color=color, label=f"{peer} p50")
        ax.plot([p[0] for p in pts], [p[2] / 1000 for p in pts], marker="x", linestyle="--", color=color,
                label=f"{peer} p99")
    ax.set_yscale("log")
    ax.set_xlabel("offered load, messages/s (open loop)")
    ax.set_ylabel("latency from intended send, ms")
    ax.set_title(title or "latency vs offered load (open loop, latency from the intended send time)", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    _save(fig, path, out["machine"])


def plot_models(out, path):
    """bench/io-models: messages/s per model at each connection count."""
    rows = [r for r in out["summary"] if r.get("experiment") == "models"]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for label in dict.fromkeys(r["label"] for r in rows):
        pts = sorted((r["connections"], r["msgs_per_s"]) for r in rows if r["label"] == label and r["msgs_per_s"])
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("connections")
    ax.set_ylabel("messages/s")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6)
    _save(fig, path, out["machine"])
