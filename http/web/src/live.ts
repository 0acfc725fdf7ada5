// Live updates from /api/events (Server-Sent Events carrying Mailpit's websocket
// messages), and what the page shows of them outside itself: the unread count in the
// title and the favicon, and browser notifications when the user allowed them.
import type { ListModel } from "./model";
import { who } from "./format";

export type LiveState = "connecting" | "live" | "reconnecting";

export function connect(model: ListModel, state: (s: LiveState) => void): () => void {
  let es: EventSource | null = null;
  let dropped = false;
  const open = () => {
    es = new EventSource("api/events");
    state(dropped ? "reconnecting" : "connecting");
    es.onopen = () => {
      state("live");
      // Events may have been missed while the stream was down.
      if (dropped) model.reload();
    };
    es.onerror = () => {
      dropped = true;
      state("reconnecting");
    };
    for (const type of ["new", "delete", "update", "prune"]) {
      es.addEventListener(type, (ev) => {
        let msg: { Type?: string; Data?: unknown };
        try {
          msg = JSON.parse((ev as MessageEvent<string>).data);
        } catch {
          return;
        }
        model.apply(msg.Type ?? type, msg.Data);
      });
    }
  };
  open();
  return () => es?.close();
}

let iconLink: HTMLLinkElement | null = null;
let lastIcon: string | null = null;
let iconTimer = 0;

/** The unread count in the title and drawn on the favicon. */
export function showUnread(unread: number, label: string) {
  const name = label ? `${label} · inlet` : "inlet";
  document.title = unread > 0 ? `(${unread > 99999 ? "99999+" : unread}) ${name}` : name;
  // The icon shows at most "99+": redrawn only when that text changes, and when the page
  // is idle (drawing and encoding it took ~9 ms, in the frame that opened a message).
  const text = unread <= 0 ? "" : unread > 99 ? "99+" : String(unread);
  if (text === lastIcon) return;
  lastIcon = text;
  if (iconTimer) cancelIdleCallback(iconTimer);
  iconTimer = requestIdleCallback(() => {
    iconTimer = 0;
    drawIcon(text);
  }, { timeout: 1000 });
}

function drawIcon(text: string) {
  const c = document.createElement("canvas");
  c.width = c.height = 64;
  const g = c.getContext("2d");
  if (!g) return;
  g.fillStyle = "#2358c4";
  g.beginPath();
  g.roundRect(4, 12, 56, 40, 8);
  g.fill();
  g.strokeStyle = "#fff";
  g.lineWidth = 5;
  g.beginPath();
  g.moveTo(10, 20);
  g.lineTo(32, 36);
  g.lineTo(54, 20);
  g.stroke();
  if (text) {
    g.fillStyle = "#d42020";
    g.beginPath();
    g.arc(46, 18, 17, 0, Math.PI * 2);
    g.fill();
    g.fillStyle = "#fff";
    g.font = `bold ${text.length > 2 ? 18 : 24}px sans-serif`;
    g.textAlign = "center";
    g.textBaseline = "middle";
    g.fillText(text, 46, 19);
  }
  if (!iconLink) {
    iconLink = document.querySelector<HTMLLinkElement>("link[rel=icon]") ?? document.createElement("link");
    iconLink.rel = "icon";
    document.head.appendChild(iconLink);
  }
  iconLink.href = c.toDataURL("image/png");
}

/** Browser notifications: off unless the user asked for them and the browser allows. */
export class Notifier {
  private pending: { from: string; subject: string }[] = [];
  private timer = 0;
  enabled = localStorage.getItem("inlet.notify") === "1";

  get permission(): NotificationPermission | "unsupported" {
    return typeof Notification === "undefined" ? "unsupported" : Notification.permission;
  }

  async toggle(): Promise<boolean> {
    if (this.enabled) {
      this.enabled = false;
    } else if (this.permission !== "unsupported") {
      const p = this.permission === "default" ? await Notification.requestPermission() : this.permission;
      this.enabled = p === "granted";
    }
    localStorage.setItem("inlet.notify", this.enabled ? "1" : "0");
    return this.enabled;
  }

  /** A new message: notify when the page is hidden; a burst becomes one notification. */
  add(from: { Name: string; Address: string } | null, subject: string) {
    if (!this.enabled || this.permission !== "granted" || !document.hidden) return;
    this.pending.push({ from: who(from), subject });
    if (!this.timer) this.timer = window.setTimeout(() => this.flush(), 1500);
  }

  private flush() {
    this.timer = 0;
    const p = this.pending;
    this.pending = [];
    if (!p.length) return;
    const title = p.length === 1 ? p[0].from || "New message" : `${p.length} new messages`;
    const body = p.length === 1 ? p[0].subject : p.slice(0, 3).map((m) => `${m.from}: ${m.subject}`).join("\n");
    const n = new Notification(title, { body, tag: "inlet-new", icon: iconLink?.href });
    n.onclick = () => {
      window.focus();
      n.close();
    };
  }
}
