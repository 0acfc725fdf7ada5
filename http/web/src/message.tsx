// One message: headers and SMTP envelope, attachments, and tabs for the HTML (in a
// sandboxed frame), the text, the HTML source, every header and the raw source.
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import * as api from "./api";
import type { Capabilities, Message, Part } from "./api";
import { addr, addrs, longDate, size } from "./format";
import { prepare } from "./frame";
import { tokenize } from "./highlight";
import { save, screenshot } from "./screenshot";
import type { Tab } from "./route";
import { Download } from "./icons";
import { TagEditor } from "./tags";

export interface MessageProps {
  id: string;
  tab: Tab | "";
  caps: Capabilities;
  knownTags: string[];
  onTab: (t: Tab) => void;
  onBack: () => void;
  onDelete: (id: string) => void;
  onRead: (id: string, read: boolean) => void;
  onTags: (id: string, tags: string[]) => void;
  onRelease: (m: Message) => void;
  onLoaded: (m: Message) => void;
  gone: boolean; // deleted while open
  listHidden: boolean;
  onToggleList: () => void;
  canPrev: boolean;
  canNext: boolean;
  onStep: (d: number) => void;
  onTag: (tag: string) => void;
}

const remoteAllowed = new Set<string>(); // message IDs whose remote content the user allowed

const PHONE = "(max-width: 640px)";
/** Whether a media query matches, following changes. */
export function useMedia(q: string): boolean {
  const [on, setOn] = useState(() => matchMedia(q).matches);
  useEffect(() => {
    const m = matchMedia(q);
    const f = () => setOn(m.matches);
    m.addEventListener("change", f);
    return () => m.removeEventListener("change", f);
  }, [q]);
  return on;
}

// A message asked for when its row is clicked, before the view renders (opening marks
// it read, so never on hover).
let pending: { id: string; p: Promise<Message>; msg?: Message } | null = null;
export function prefetch(id: string): Promise<Message> {
  const p = api.message(id);
  const entry: { id: string; p: Promise<Message>; msg?: Message } = { id, p };
  // Kept once here, so a view opened after the answer draws it in its first render.
  p.then((msg) => (entry.msg = msg)).catch(() => {});
  pending = entry;
  return p;
}
function take(id: string, signal: AbortSignal): Promise<Message> {
  const p = pending && pending.id === id ? pending.p : api.message(id, signal);
  pending = null;
  return p;
}
/** The message already fetched for this ID, if any. */
function ready(id: string): Message | null {
  return pending && pending.id === id && pending.msg ? pending.msg : null;
}

export function MessageView(p: MessageProps) {
  const [m, setM] = useState<Message | null>(() => ready(p.id));
  const [err, setErr] = useState("");
  const [read, setRead] = useState(true);
  const [tags, setTags] = useState<string[]>(() => ready(p.id)?.Tags ?? []);
  const phone = useMedia(PHONE);
  // The HTML check is asked for once the message is there: its score labels the tab.
  const [check, setCheck] = useState<api.HtmlCheck | string | null>(null);
  useEffect(() => {
    setCheck(null);
    if (!m || !m.HTML) return;
    const ac = new AbortController();
    api
      .htmlCheck(m.ID, ac.signal)
      .then(setCheck)
      .catch((e: unknown) => !ac.signal.aborted && setCheck(e instanceof Error ? e.message : String(e)));
    return () => ac.abort();
  }, [m?.ID]);

  // The spam check, when the server runs one, also once the message is there: its score
  // labels the tab, as Mailpit's does.
  const [spam, setSpam] = useState<api.SpamCheck | string | null>(null);
  const spamService = p.caps.spam;
  useEffect(() => {
    setSpam(null);
    if (!m || !spamService) return;
    const ac = new AbortController();
    api
      .spamCheck(m.ID, spamService, ac.signal)
      .then(setSpam)
      .catch((e: unknown) => !ac.signal.aborted && setSpam(e instanceof Error ? e.message : String(e)));
    return () => ac.abort();
  }, [m?.ID, spamService]);

  useLayoutEffect(() => {
    const ac = new AbortController();
    const t0 = performance.now();
    const shown = (msg: Message) => {
      setM(msg);
      setErr("");
      setRead(true); // opening a message marks it read, as in Mailpit
      setTags(msg.Tags ?? []);
      // The list marks the row read after the message is painted: the open message's
      // frame does not also carry the list's and the counters' renders.
      requestAnimationFrame(() => setTimeout(() => p.onLoaded(msg)));
      requestAnimationFrame(() => {
        performance.measure("inlet:open", { start: t0, end: performance.now() });
      });
    };
    const now = ready(p.id);
    if (now) {
      pending = null;
      if (m !== now) shown(now);
      else requestAnimationFrame(() => setTimeout(() => p.onLoaded(now)));
      return () => ac.abort();
    }
    setM(null);
    setErr("");
    take(p.id, ac.signal)
      .then((msg) => {
        if (!ac.signal.aborted) shown(msg);
      })
      .catch((e: unknown) => {
        if (!ac.signal.aborted) setErr(e instanceof api.ApiError && e.status === 404 ? "gone" : String(e));
      });
    return () => ac.abort();
  }, [p.id]);

  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    if (m && matchMedia("(max-width: 640px)").matches) heading.current?.focus({ preventScroll: true });
  }, [m?.ID]);

  const back = (
    <button type="button" class="back" onClick={p.onBack}>
      <span aria-hidden="true">←</span> Back
    </button>
  );
  if (err === "gone" || (p.gone && !m))
    return (
      <div class="msg-empty">
        {back}
        <p>This message is no longer there (deleted).</p>
      </div>
    );
  if (err)
    return (
      <div class="msg-empty">
        {back}
        <p class="error">Could not load the message: {err}</p>
      </div>
    );
  if (!m)
    return (
      <div class="msg-empty" aria-busy="true">
        {back}
        <p class="muted">Loading…</p>
      </div>
    );

  const tab: Tab = p.tab || (m.HTML ? "html" : "text");
  const parts = [...(m.Inline ?? []), ...(m.Attachments ?? [])];
  const score = check && typeof check !== "string" ? ` ${Math.round(check.Total.Supported)}%` : "";
  const tabs: [Tab, string][] = [
    ["html", "HTML"],
    ["text", "Text"],
    ["source", phone ? "Source" : "HTML source"],
    ["headers", "Headers"],
    ["raw", "Raw"],
    ["check", (phone ? "Check" : "HTML Check") + score],
    ["links", phone ? "Links" : "Link Check"],
  ];
  if (spamService) {
    const n = spam && typeof spam !== "string" && !spam.Error ? ` ${spamScore(spam.Score)}` : "";
    tabs.push(["spam", (phone ? "Spam" : "Spam Score") + n]);
  }
  const tabIds = (t: Tab) => `tab-${t}`;

  return (
    <article class="msg" aria-labelledby="msg-subject">
      <div class="msg-tools" role="toolbar" aria-label="Message actions">
        {back}
        <button type="button" class="list-toggle" onClick={p.onToggleList}
          title={p.listHidden ? "Show the message list beside the message" : "Hide the message list"}>
          {p.listHidden ? "Show list" : "Hide list"}
        </button>
        <span class="seg prev-next">
          <button type="button" aria-label="Previous message" title="Previous message (k)" aria-keyshortcuts="k"
            disabled={!p.canPrev} onClick={() => p.onStep(-1)}>
            <span aria-hidden="true">↑</span>
          </button>
          <button type="button" aria-label="Next message" title="Next message (j)" aria-keyshortcuts="j"
            disabled={!p.canNext} onClick={() => p.onStep(1)}>
            <span aria-hidden="true">↓</span>
          </button>
        </span>
        <button
          type="button"
          onClick={() => {
            setRead(!read);
            p.onRead(m.ID, !read);
          }}
        >
          {read ? "Mark unread" : "Mark read"}
        </button>
        <button type="button" class="danger" onClick={() => p.onDelete(m.ID)}>
          Delete
        </button>
        {p.caps.release ? (
          <button type="button" onClick={() => p.onRelease(m)}>
            Release…
          </button>
        ) : null}
        <Downloads m={m} />
      </div>
      {p.gone ? <p class="notice">This message has been deleted.</p> : null}
      <h2 id="msg-subject" tabIndex={-1} ref={heading} dir="auto">
        {m.Subject || "(no subject)"}
      </h2>
      {(() => {
        const primary = (
          <>
            <Field k="From" v={addr(m.From)} />
            <Field k="To" v={addrs(m.To)} more={more(m.To, m.Totals?.To)} />
            <Field k="Date" v={longDate(m.Date)} />
          </>
        );
        const rest = (
          <>
            <Field k="Cc" v={addrs(m.Cc)} more={more(m.Cc, m.Totals?.Cc)} />
            <Field k="Bcc" v={addrs(m.Bcc)} more={more(m.Bcc, m.Totals?.Bcc)} />
            <Field k="Reply-To" v={addrs(m.ReplyTo)} more={more(m.ReplyTo, m.Totals?.ReplyTo)} />
            <Field k="Return-Path" v={m.ReturnPath ? `<${m.ReturnPath}>` : ""} />
            <Field k="Received" v={longDate(m.Created)} />
            <Field k="Size" v={size(m.Size)} />
            {m.Envelope ? <Envelope e={m.Envelope} /> : null}
            <dt>Tags</dt>
            <dd>
              <TagEditor
                tags={tags}
                known={p.knownTags}
                editable={p.caps.tags}
                onPick={p.onTag}
                onChange={(t) => {
                  setTags(t);
                  p.onTags(m.ID, t);
                }}
              />
            </dd>
          </>
        );
        // On a phone the body comes first: the rest of the headers and the attachments
        // are one tap away.
        return phone ? (
          <>
            <dl class="hdrs">{primary}</dl>
            <details class="more-hdrs">
              <summary>
                Details{parts.length ? `, ${parts.length} attachment${parts.length > 1 ? "s" : ""}` : ""}
              </summary>
              <dl class="hdrs">{rest}</dl>
              {parts.length ? <Attachments id={m.ID} parts={m.Attachments ?? []} inline={m.Inline ?? []}
                more={more(m.Attachments, m.Totals?.Attachments)} /> : null}
            </details>
          </>
        ) : (
          <>
            <dl class="hdrs">
              {primary}
              {rest}
            </dl>
            {parts.length ? <Attachments id={m.ID} parts={m.Attachments ?? []} inline={m.Inline ?? []}
              more={more(m.Attachments, m.Totals?.Attachments)} /> : null}
          </>
        );
      })()}
      <div class="tabs" role="tablist" aria-label="Views of the message">
        {tabs.map(([t, label]) => (
          <button
            type="button"
            role="tab"
            id={tabIds(t)}
            aria-selected={t === tab}
            aria-controls="msg-panel"
            tabIndex={t === tab ? 0 : -1}
            onClick={() => p.onTab(t)}
            onKeyDown={(e) => {
              const k = tabs.findIndex(([x]) => x === t);
              const d = e.key === "ArrowRight" ? 1 : e.key === "ArrowLeft" ? -1 : 0;
              if (!d) return;
              e.preventDefault();
              const n = tabs[(k + d + tabs.length) % tabs.length][0];
              p.onTab(n);
              requestAnimationFrame(() => document.getElementById(tabIds(n))?.focus());
            }}
          >
            {label}
          </button>
        ))}
      </div>
      <div class="panel" id="msg-panel" role="tabpanel" aria-labelledby={tabIds(tab)}>
        {tab === "html" ? <HtmlView m={m} parts={parts} /> : null}
        {tab === "text" ? <TextView text={m.Text} /> : null}
        {tab === "source" ? <SourceView html={m.HTML} /> : null}
        {tab === "headers" ? <HeadersView id={m.ID} /> : null}
        {tab === "raw" ? <RawView id={m.ID} /> : null}
        {tab === "check" ? <HtmlCheckView m={m} check={check} /> : null}
        {tab === "links" ? <LinkCheckView id={m.ID} /> : null}
        {tab === "spam" ? <SpamView service={spamService} spam={spam} /> : null}
      </div>
    </article>
  );
}

// How many entries of a list the server cut (it keeps the first ones and says how many
// there were in Totals), so a cut list is never shown as whole.
function more(shown: unknown[] | null | undefined, total: number | undefined): number {
  return Math.max(0, (total ?? 0) - (shown?.length ?? 0));
}

function AndMore({ n }: { n: number }) {
  return n > 0 ? <span class="more"> and {n.toLocaleString("en-US")} more</span> : null;
}

function Field({ k, v, more = 0 }: { k: string; v: string; more?: number }) {
  if (!v && !more) return null;
  return (
    <>
      <dt>{k}</dt>
      <dd>
        {v}
        <AndMore n={more} />
      </dd>
    </>
  );
}

function Envelope({ e }: { e: api.Envelope }) {
  const parts = [
    `MAIL FROM:<${e.From}>`,
    ...(e.To ?? []).map((t) => `RCPT TO:<${t}>`),
    e.Helo ? `HELO ${e.Helo}` : "",
    e.Remote ? `from ${e.Remote}` : "",
    e.Protocol ?? "",
  ].filter(Boolean);
  return (
    <>
      <dt>Envelope</dt>
      <dd class="env">
        {parts.map((x, i) => (
          <span key={i}>{x}</span>
        ))}
      </dd>
    </>
  );
}

function Attachments({ id, parts, inline, more }: { id: string; parts: Part[]; inline: Part[]; more: number }) {
  const list = [...parts, ...inline];
  return (
    <section class="atts" aria-label="Attachments">
      <h3 class="vh">Attachments</h3>
      <ul>
        {list.map((a) => (
          <li key={a.PartID} class="att-item">
            <AttachmentLink id={id} a={a} inline={inline.includes(a)} />
          </li>
        ))}
      </ul>
      {more > 0 ? (
        <p class="more">
          and {more.toLocaleString("en-US")} more attachment{more > 1 ? "s" : ""}
        </p>
      ) : null}
    </section>
  );
}

function AttachmentLink({ id, a, inline }: { id: string; a: Part; inline: boolean }) {
  const [thumb, setThumb] = useState(/^image\//i.test(a.ContentType));
  const name = a.FileName || (a.ContentID ? `cid:${a.ContentID.replace(/^<|>$/g, "")}` : `part ${a.PartID}`);
  // The card opens the part in a new tab (served inline under the sandbox policy, so an
  // HTML or SVG attachment runs no script); the arrow beside it downloads it.
  return (
    <>
      <a class="att-link" href={api.viewPartUrl(id, a.PartID)} target="_blank" rel="noopener noreferrer"
        title={`Open ${name} in a new tab`}>
        {thumb ? (
          <img class="thumb" src={api.thumbUrl(id, a.PartID)} alt="" loading="lazy" onError={() => setThumb(false)} />
        ) : (
          <span class="thumb file" aria-hidden="true">
            {(a.FileName.includes(".") ? a.FileName.split(".").pop()! : a.ContentType.split("/").pop() || "file")
              .slice(0, 4)
              .toUpperCase()}
          </span>
        )}
        <span class="att-name"><bdi>{name}</bdi></span>
        <span class="att-meta">
          {a.ContentType} · {size(a.Size)}
          {inline ? " · inline" : ""}
        </span>
      </a>
      <a class="att-dl button" href={api.partUrl(id, a.PartID)} download={a.FileName || `part-${a.PartID}`}
        aria-label={`Download ${name}`} title={`Download ${name}`}>
        <Download />
      </a>
    </>
  );
}

/** Downloads of the message: its raw bytes, its HTML body and its text body. */
function Downloads({ m }: { m: Message }) {
  const ref = useRef<HTMLDetailsElement>(null);
  const close = () => ref.current?.removeAttribute("open");
  useEffect(() => {
    const outside = (e: Event) => {
      if (ref.current && !ref.current.contains(e.target as Node)) close();
    };
    document.addEventListener("click", outside);
    return () => document.removeEventListener("click", outside);
  }, []);
  return (
    <details class="menu" ref={ref} onKeyDown={(e) => e.key === "Escape" && (close(), e.stopPropagation())}>
      <summary class="button">
        <Download /> Download
      </summary>
      <ul class="menu-list">
        <li>
          <a href={api.rawDownloadUrl(m.ID)} download={`${m.ID}.eml`} onClick={close}>
            Raw message (.eml)
          </a>
        </li>
        {m.HTML ? (
          <li>
            <a href={api.htmlBodyUrl(m.ID)} download={`${m.ID}.html`} onClick={close}>
              HTML body (.html)
            </a>
          </li>
        ) : null}
        {m.Text ? (
          <li>
            <a href={api.textBodyUrl(m.ID)} download={`${m.ID}.txt`} onClick={close}>
              Text body (.txt)
            </a>
          </li>
        ) : null}
      </ul>
    </details>
  );
}

type Width = "phone" | "tablet" | "desktop";

function HtmlView({ m, parts }: { m: Message; parts: Part[] }) {
  const [allow, setAllow] = useState(remoteAllowed.has(m.ID));
  const [width, setWidth] = useState<Width>(() => (localStorage.getItem("inlet.width") as Width) || "desktop");
  const frame = useRef<HTMLIFrameElement>(null);
  const [shooting, setShooting] = useState(false);
  const [shotErr, setShotErr] = useState("");
  const prepared = useMemo(() => (m.HTML ? prepare(m.HTML, m.ID, parts, allow) : null), [m.ID, m.HTML, allow]);

  // The frame shares the page's origin (no scripts: the sandbox has no allow-scripts), so
  // the page can size it to its content and the message pane scrolls as one.
  useEffect(() => {
    const f = frame.current;
    if (!f) return;
    let ro: ResizeObserver | null = null;
    const fit = () => {
      const d = f.contentDocument;
      if (!d || !d.documentElement) return;
      f.style.height = `${Math.max(120, d.documentElement.scrollHeight)}px`;
    };
    const onLoad = () => {
      fit();
      const d = f.contentDocument;
      if (d?.documentElement) {
        ro = new ResizeObserver(fit);
        ro.observe(d.documentElement);
      }
    };
    f.addEventListener("load", onLoad);
    return () => {
      f.removeEventListener("load", onLoad);
      ro?.disconnect();
    };
  }, [prepared]);

  const phone = useMedia(PHONE);
  if (!prepared) return <p class="muted">This message has no HTML part.</p>;
  const widths: [Width, string][] = [
    ["phone", "Phone"],
    ["tablet", "Tablet"],
    ["desktop", "Desktop"],
  ];
  return (
    <div class="html-view">
      <div class="html-bar">
        {phone ? null : <div class="seg" role="group" aria-label="Preview width">
          {widths.map(([w, label]) => (
            <button
              type="button"
              key={w}
              aria-pressed={w === width}
              onClick={() => {
                setWidth(w);
                localStorage.setItem("inlet.width", w);
              }}
            >
              {label}
            </button>
          ))}
        </div>}
        <button
          type="button"
          disabled={shooting}
          title="Download a PNG of the HTML as shown here"
          onClick={async () => {
            if (!frame.current) return;
            setShooting(true);
            try {
              save(await screenshot(frame.current), `${m.ID}.png`);
            } catch (e) {
              setShotErr(e instanceof Error ? e.message : String(e));
            } finally {
              setShooting(false);
            }
          }}
        >
          {shooting ? "Making the PNG…" : "Screenshot (PNG)"}
        </button>
        {shotErr ? <span class="error">Screenshot failed: {shotErr}</span> : null}
        {prepared.remote > 0 && !allow ? (
          <p class="remote" role="status">
            {prepared.remote} remote {prepared.remote === 1 ? "resource" : "resources"} blocked.{" "}
            <button
              type="button"
              onClick={() => {
                remoteAllowed.add(m.ID);
                setAllow(true);
              }}
            >
              Show remote content
            </button>
          </p>
        ) : null}
      </div>
      <div class={`frame-box w-${phone ? "desktop" : width}`}>
        <iframe
          ref={frame}
          key={`${m.ID}-${allow}`}
          title="Message HTML"
          sandbox="allow-same-origin allow-popups allow-popups-to-escape-sandbox"
          referrerpolicy="no-referrer"
          srcdoc={prepared.srcdoc}
        />
      </div>
    </div>
  );
}

const urlRe = /\bhttps?:\/\/[^\s<>"')\]]+/g;

function TextView({ text }: { text: string }) {
  if (!text) return <p class="muted">This message has no text part.</p>;
  const out: (string | preact.JSX.Element)[] = [];
  let at = 0;
  let n = 0;
  for (const mt of text.slice(0, 2_000_000).matchAll(urlRe)) {
    out.push(text.slice(at, mt.index));
    out.push(
      <a key={n++} href={mt[0]} target="_blank" rel="noopener noreferrer">
        {mt[0]}
      </a>,
    );
    at = mt.index! + mt[0].length;
  }
  out.push(text.slice(at));
  return <pre class="text">{out}</pre>;
}

function SourceView({ html }: { html: string }) {
  const runs = useMemo(() => tokenize(html), [html]);
  if (!html) return <p class="muted">This message has no HTML part.</p>;
  return (
    <pre class="source">
      <code>
        {runs.map((r, i) => (r.kind === "text" ? r.text : <span key={i} class={`h-${r.kind}`}>{r.text}</span>))}
      </code>
    </pre>
  );
}

/** Headers from the API's headers route, or read from the raw message where it has none. */
function HeadersView({ id }: { id: string }) {
  const [rows, setRows] = useState<[string, string][] | null>(null);
  const [err, setErr] = useState("");
  const [filter, setFilter] = useState("");
  useEffect(() => {
    const ac = new AbortController();
    setRows(null);
    api
      .headers(id, ac.signal)
      .then((h) => {
        const r: [string, string][] = [];
        for (const [k, vs] of Object.entries(h)) for (const v of vs) r.push([k, v]);
        setRows(r);
      })
      .catch(async () => {
        if (ac.signal.aborted) return;
        try {
          const { text } = await api.raw(id, ac.signal);
          setRows(parseHeaders(text));
        } catch (e) {
          if (!ac.signal.aborted) setErr(String(e));
        }
      });
    return () => ac.abort();
  }, [id]);
  if (err) return <p class="error">{err}</p>;
  if (!rows) return <p class="muted">Loading…</p>;
  const f = filter.trim().toLowerCase();
  const shown = f ? rows.filter(([k, v]) => k.toLowerCase().includes(f) || v.toLowerCase().includes(f)) : rows;
  return (
    <div>
    <div class="hdr-filter">
      <input type="search" aria-label="Filter headers" placeholder="Filter headers (name or value)" value={filter}
        onInput={(e) => setFilter((e.currentTarget as HTMLInputElement).value)} />
      <span class="muted" aria-live="polite">
        {f ? `${shown.length} of ${rows.length}` : `${rows.length}`} header{rows.length === 1 ? "" : "s"}
      </span>
    </div>
    <table class="headers">
      <caption class="vh">Every header of the message</caption>
      <thead>
        <tr>
          <th scope="col">Header</th>
          <th scope="col">Value</th>
        </tr>
      </thead>
      <tbody>
        {shown.map(([k, v], i) => (
          <tr key={i}>
            <th scope="row">{k}</th>
            <td>{v}</td>
          </tr>
        ))}
      </tbody>
    </table>
    </div>
  );
}

export function parseHeaders(raw: string): [string, string][] {
  const end = raw.search(/\r?\n\r?\n/);
  const head = end < 0 ? raw : raw.slice(0, end);
  const out: [string, string][] = [];
  for (const line of head.split(/\r?\n/)) {
    if (/^[ \t]/.test(line) && out.length) out[out.length - 1][1] += " " + line.trim();
    else {
      const c = line.indexOf(":");
      if (c > 0) out.push([line.slice(0, c).trim(), line.slice(c + 1).trim()]);
    }
  }
  return out;
}

const RAW_SHOWN = 2 * 1024 * 1024;

function RawView({ id }: { id: string }) {
  const [raw, setRaw] = useState<{ text: string; bytes: number } | null>(null);
  const [err, setErr] = useState("");
  useEffect(() => {
    const ac = new AbortController();
    setRaw(null);
    api
      .raw(id, ac.signal)
      .then(setRaw)
      .catch((e) => !ac.signal.aborted && setErr(String(e)));
    return () => ac.abort();
  }, [id]);
  if (err) return <p class="error">{err}</p>;
  if (!raw) return <p class="muted">Loading…</p>;
  return (
    <div>
      <p class="muted">
        {size(raw.bytes)}, shown as UTF-8.{" "}
        <a href={api.rawUrl(id)} target="_blank" rel="noopener">
          Open raw
        </a>
      </p>
      <pre class="raw">{raw.text.length > RAW_SHOWN ? raw.text.slice(0, RAW_SHOWN) + "\n…" : raw.text}</pre>
    </div>
  );
}

const SUPPORT: Record<string, string> = { yes: "Supported", partial: "Partial", no: "Not supported" };

/** The HTML check: how well email clients support what the HTML uses (caniemail.com). */
function HtmlCheckView({ m, check }: { m: Message; check: api.HtmlCheck | string | null }) {
  if (!m.HTML) return <p class="muted">This message has no HTML part.</p>;
  if (check === null) return <p class="muted">Checking…</p>;
  if (typeof check === "string") return <p class="error">The HTML check is not available: {check}</p>;
  const pct = (n: number) => `${Math.round(n)}%`;
  const warnings = [...(check.Warnings ?? [])].sort((a, b) => b.Score.Unsupported - a.Score.Unsupported);
  return (
    <div class="html-check">
      <p class="score">
        <strong class="big">{pct(check.Total.Supported)}</strong> supported
        <span class="muted">
          {" "}
          · {pct(check.Total.Partial)} partially · {pct(check.Total.Unsupported)} not, in the email clients
          caniemail.com knows ({check.Total.Tests} tests over {check.Total.Nodes} HTML nodes)
        </span>
      </p>
      {warnings.length === 0 ? <p>Nothing in this HTML is known to be unsupported.</p> : null}
      <ul class="warnings">
        {warnings.map((w) => (
          <li key={w.Slug}>
            <details>
              <summary>
                <span class="w-title">{w.Title}</span>
                <span class="w-cat">{w.Category}</span>
                <span class="w-score">
                  {pct(w.Score.Supported)} yes · {pct(w.Score.Partial)} partial · {pct(w.Score.Unsupported)} no
                </span>
              </summary>
              {w.Description ? <p>{w.Description}</p> : null}
              {/^https:\/\//.test(w.URL) ? (
                <p>
                  <a href={w.URL} target="_blank" rel="noopener noreferrer">
                    {w.Title} on caniemail.com
                  </a>
                </p>
              ) : null}
              <table class="clients">
                <caption class="vh">Support of {w.Title} by email client</caption>
                <thead>
                  <tr>
                    <th scope="col">Client</th>
                    <th scope="col">Support</th>
                    <th scope="col">Note</th>
                  </tr>
                </thead>
                <tbody>
                  {w.Results.map((r, i) => (
                    <tr key={i}>
                      <th scope="row">{r.Name}</th>
                      <td class={`sup-${r.Support}`}>{SUPPORT[r.Support] ?? r.Support}</td>
                      <td>{r.NoteNumber ? w.NotesByNumber[r.NoteNumber] ?? "" : ""}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </details>
          </li>
        ))}
      </ul>
    </div>
  );
}

/** The link check, run when asked: each link of the message with the status it answers. */
function LinkCheckView({ id }: { id: string }) {
  const [follow, setFollow] = useState(false);
  const [busy, setBusy] = useState(false);
  const [res, setRes] = useState<api.LinkCheck | null>(null);
  const [err, setErr] = useState("");
  const ac = useRef<AbortController | null>(null);
  useEffect(() => () => ac.current?.abort(), [id]);
  const run = async () => {
    ac.current?.abort();
    ac.current = new AbortController();
    setBusy(true);
    setErr("");
    try {
      setRes(await api.linkCheck(id, follow, ac.current.signal));
    } catch (e) {
      if (!ac.current.signal.aborted) setErr(e instanceof Error ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  };
  const links = res?.Links ?? [];
  return (
    <div class="linkcheck">
      <div class="lc-bar">
        <button type="button" onClick={run} disabled={busy}>
          {busy ? "Checking links…" : res ? "Check links again" : "Check links"}
        </button>
        <label>
          <input type="checkbox" checked={follow} onChange={(e) => setFollow((e.currentTarget as HTMLInputElement).checked)} />{" "}
          Follow redirects
        </label>
      </div>
      <p class="muted">
        Requests every http(s) link of the message from the server (at most 100; nothing is fetched until you ask).
      </p>
      {err ? <p class="error">{err}</p> : null}
      {res ? (
        <>
          <p role="status">
            {links.length} link{links.length === 1 ? "" : "s"}, {res.Errors} error{res.Errors === 1 ? "" : "s"}
          </p>
          <table class="links">
            <thead>
              <tr>
                <th scope="col">Status</th>
                <th scope="col">Link</th>
              </tr>
            </thead>
            <tbody>
              {links.map((l, i) => (
                <tr key={i}>
                  <td class={l.StatusCode >= 200 && l.StatusCode < 400 ? "ok" : "bad"}>
                    {l.StatusCode || "—"} {l.Status}
                  </td>
                  <td>
                    <a href={l.URL} target="_blank" rel="noopener noreferrer">
                      {l.URL}
                    </a>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      ) : null}
    </div>
  );
}

const spamScore = (n: number) => (Math.round(n * 10) / 10).toFixed(1);

/** The spam check's answer as Mailpit shows it: the score, the verdict, the rules that hit. */
function SpamView({ service, spam }: { service: api.SpamService | ""; spam: api.SpamCheck | string | null }) {
  const name = service === "rspamd" ? "Rspamd" : "SpamAssassin";
  if (!service) return <p class="muted">No spam check is configured on this server.</p>;
  if (spam === null) return <p class="muted">Asking {name}…</p>;
  if (typeof spam === "string") return <p class="error">The spam check is not available: {spam}</p>;
  if (spam.Error) return <p class="error">{name} could not check this message: {spam.Error}</p>;
  const rules = [...(spam.Rules ?? [])].sort((a, b) => b.Score - a.Score);
  const threshold = service === "rspamd" ? spam.Threshold : 5; // SpamAssassin's default required_score
  return (
    <div class="spam-check">
      <p class="spam-sum">
        <strong class={`big ${spam.IsSpam ? "spam-yes" : "spam-no"}`}>{spamScore(spam.Score)}</strong>{" "}
        <span class={`verdict ${spam.IsSpam ? "spam-yes" : "spam-no"}`}>{spam.IsSpam ? "Spam" : "Not spam"}</span>
        <span class="muted">
          {" "}
          · {name}
          {threshold ? `, spam from ${spamScore(threshold)}` : ""}
          {spam.Action ? `, action: ${spam.Action}` : ""}
        </span>
      </p>
      {rules.length ? (
        <table class="links spam-rules">
          <caption class="vh">Rules that matched, highest score first</caption>
          <thead>
            <tr>
              <th scope="col">Score</th>
              <th scope="col">Rule</th>
              <th scope="col">Description</th>
            </tr>
          </thead>
          <tbody>
            {rules.map((r, i) => (
              <tr key={i}>
                <td class={r.Score > 0 ? "bad" : r.Score < 0 ? "ok" : ""}>{r.Score > 0 ? "+" : ""}{spamScore(r.Score)}</td>
                <td><code>{r.Name}</code></td>
                <td>{r.Description}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p class="muted">No rule matched.</p>
      )}
    </div>
  );
}
