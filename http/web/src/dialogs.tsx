// Modal dialogs (native <dialog>: focus stays inside, Esc closes): keyboard help,
// compose (POST api/v1/send) and release (POST api/v1/message/{ID}/release).
import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import * as api from "./api";
import type { Message } from "./api";
import { addr } from "./format";

function Dialog(p: { title: string; onClose: () => void; children: ComponentChildren }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current!;
    d.showModal();
    const close = () => p.onClose();
    d.addEventListener("close", close);
    return () => d.removeEventListener("close", close);
  }, []);
  return (
    <dialog ref={ref} aria-labelledby="dialog-title">
      <div class="dialog-head">
        <h2 id="dialog-title">{p.title}</h2>
        <button type="button" aria-label="Close" onClick={() => ref.current?.close()}>
          ×
        </button>
      </div>
      {p.children}
    </dialog>
  );
}

const keys: [string, string][] = [
  ["j / ↓", "next message (with one open: open the next)"],
  ["k / ↑", "previous message (with one open: open the previous)"],
  ["Home / End", "first / last message"],
  ["Enter", "open the message"],
  ["x", "select or unselect (Shift+x: a range)"],
  ["Delete / #", "delete the selection, or the open message"],
  ["/", "search"],
  ["Esc", "clear the selection, close the message, leave the search box"],
  ["← / →", "on the handle beside the list: narrow or widen it"],
  ["?", "this help"],
];

export function HelpDialog({ onClose }: { onClose: () => void }) {
  return (
    <Dialog title="Keyboard shortcuts" onClose={onClose}>
      <table class="keys">
        <tbody>
          {keys.map(([k, v]) => (
            <tr key={k}>
              <th scope="row">
                <kbd>{k}</kbd>
              </th>
              <td>{v}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p class="muted">
        Search uses Mailpit's language: <code>from:</code> <code>to:</code> <code>subject:</code> <code>tag:</code>{" "}
        <code>is:unread</code> <code>has:attachment</code> <code>larger:1M</code> <code>after:2026-01-01</code>{" "}
        <code>"a phrase"</code>, <code>-</code> to negate; <code>mailbox:ADDRESS</code> shows one inbox.
      </p>
    </Dialog>
  );
}

const split = (s: string) =>
  s
    .split(/[,;\s]+/)
    .map((x) => x.trim())
    .filter(Boolean);

export function ComposeDialog({ onClose, onSent }: { onClose: () => void; onSent: (id: string) => void }) {
  const [err, setErr] = useState("");
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget as HTMLFormElement);
    const to = split(String(f.get("to") ?? ""));
    setBusy(true);
    try {
      const id = await api.sendMessage({
        From: { Email: String(f.get("from") ?? "") },
        To: to.map((Email) => ({ Email })),
        Subject: String(f.get("subject") ?? ""),
        Text: String(f.get("text") ?? ""),
      });
      onSent(id);
    } catch (x) {
      setErr(String(x));
    } finally {
      setBusy(false);
    }
  };
  return (
    <Dialog title="Compose" onClose={onClose}>
      <form class="form" onSubmit={submit}>
        <label>
          From <input name="from" type="email" required autocomplete="email" />
        </label>
        <label>
          To <input name="to" type="text" required placeholder="a@example.com, b@example.com" />
        </label>
        <label>
          Subject <input name="subject" type="text" />
        </label>
        <label>
          Text <textarea name="text" rows={8} />
        </label>
        {err ? <p class="error">{err}</p> : null}
        <div class="form-actions">
          <button type="submit" disabled={busy}>
            Send
          </button>
        </div>
      </form>
    </Dialog>
  );
}

export function ReleaseDialog(p: {
  message: Message;
  relay?: api.Relay;
  onClose: () => void;
  onDone: (n: number, deleted: boolean) => void;
}) {
  const [err, setErr] = useState("");
  const [busy, setBusy] = useState(false);
  const initial = (p.message.To ?? []).map((a) => a.Address).join(", ");
  const submit = async (e: Event) => {
    e.preventDefault();
    const data = new FormData(e.currentTarget as HTMLFormElement);
    const to = split(String(data.get("to") ?? ""));
    const del = data.get("delete") === "on";
    setBusy(true);
    try {
      await api.release(p.message.ID, to);
      if (del) await api.remove([p.message.ID]);
      p.onDone(to.length, del);
    } catch (x) {
      setErr(String(x));
    } finally {
      setBusy(false);
    }
  };
  const r = p.relay ?? {};
  return (
    <Dialog title="Release message" onClose={p.onClose}>
      <form class="form" onSubmit={submit}>
        <p>
          Relays “{p.message.Subject || "(no subject)"}” from {addr(p.message.From)} through the configured SMTP server.
        </p>
        <dl class="relay">
          {r.SMTPServer ? (
            <>
              <dt>SMTP server</dt>
              <dd>{r.SMTPServer}</dd>
            </>
          ) : null}
          {r.ReturnPath ? (
            <>
              <dt>Return-Path</dt>
              <dd>{r.ReturnPath}</dd>
            </>
          ) : null}
          {r.AllowedRecipients ? (
            <>
              <dt>Allowed recipients</dt>
              <dd>
                <code>{r.AllowedRecipients}</code>
              </dd>
            </>
          ) : null}
          {r.BlockedRecipients ? (
            <>
              <dt>Blocked recipients</dt>
              <dd>
                <code>{r.BlockedRecipients}</code>
              </dd>
            </>
          ) : null}
        </dl>
        <label>
          To <input name="to" type="text" required value={initial} />
        </label>
        <label class="inline">
          <input name="delete" type="checkbox" /> Delete the message after releasing it
        </label>
        {err ? <p class="error">{err}</p> : null}
        <div class="form-actions">
          <button type="submit" disabled={busy}>
            Release
          </button>
        </div>
      </form>
    </Dialog>
  );
}
