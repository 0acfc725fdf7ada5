// The HTTP API as the page uses it: Mailpit's API v1 shapes (and inlet's mailbox route).
// Every URL is relative, so the page works under a webroot ("/mail/") as well as at "/".

export interface Address {
  Name: string;
  Address: string;
}

/** inlet: every list's whole count, on a summary (or message) whose lists were cut to
 * their first entries; absent when every list is whole. */
export interface Totals {
  To: number;
  Cc: number;
  Bcc: number;
  ReplyTo: number;
  Attachments: number;
}

export interface Summary {
  ID: string;
  MessageID?: string;
  Read: boolean;
  From: Address | null;
  To: Address[] | null;
  Cc?: Address[] | null;
  Bcc?: Address[] | null;
  Subject: string;
  Created: string;
  Size: number;
  Tags: string[] | null;
  Attachments: number;
  Snippet?: string;
  Totals?: Totals;
}

export interface ListPage {
  total: number;
  unread: number;
  count: number;
  messages_count?: number;
  messages_unread?: number;
  start: number;
  tags?: string[];
  messages: Summary[] | null;
}

export interface Part {
  PartID: string;
  FileName: string;
  ContentType: string;
  ContentID: string;
  Size: number;
}

export interface Envelope {
  From: string;
  To: string[];
  Helo?: string;
  Remote?: string;
  Protocol?: string;
}

export interface Message {
  ID: string;
  MessageID: string;
  Read?: boolean;
  From: Address | null;
  To: Address[] | null;
  Cc: Address[] | null;
  Bcc: Address[] | null;
  ReplyTo: Address[] | null;
  ReturnPath?: string;
  Subject: string;
  Date: string | null;
  Created?: string;
  Tags: string[] | null;
  Text: string;
  HTML: string;
  Size: number;
  Inline: Part[] | null;
  Attachments: Part[] | null;
  Envelope?: Envelope;
  Totals?: Totals;
}

export interface WebUIConfig {
  Label?: string;
  SpamAssassin?: boolean;
  Rspamd?: boolean;
  HideDeleteAllButton?: boolean;
  MessageRelay?: Relay & { Enabled?: boolean };
}

export interface Relay {
  SMTPServer?: string;
  ReturnPath?: string;
  AllowedRecipients?: string;
  BlockedRecipients?: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function check(r: Response): Promise<Response> {
  if (r.ok) return r;
  // Mailpit's errors are plain text; POST /api/v1/send's are {"Error": "..."}.
  let text = r.statusText;
  try {
    const body = (await r.text()).trim();
    if (body.startsWith("{")) {
      const json = JSON.parse(body) as { Error?: string };
      if (typeof json.Error === "string") text = json.Error;
    } else if (body) {
      text = body;
    }
  } catch {
    // unreadable: keep the status text
  }
  throw new ApiError(r.status, `${r.status} ${text}`);
}

// Reads use the default cache mode (the API answers no-store anyway), so the first list
// can be the response the server preloaded with the page (a Link header).
async function getJSON<T>(url: string, signal?: AbortSignal): Promise<T> {
  const r = await check(await fetch(url, { signal }));
  return (await r.json()) as T;
}

async function send(method: string, url: string, body?: unknown): Promise<Response> {
  const init: RequestInit = { method, cache: "no-store" };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers = { "Content-Type": "application/json" };
  }
  return check(await fetch(url, init));
}

const enc = encodeURIComponent;

/** The time zone the search language reads dates in (Mailpit's `tz`). */
function zone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  } catch {
    return "UTC";
  }
}

/**
 * A list view is a query in Mailpit's language. The page adds one term, `mailbox:ADDRESS`:
 * alone it is inlet's mailbox route (the envelope recipients, what a disposable inbox
 * shows); with other terms it reads as `addressed:ADDRESS`.
 */
export function parseMailbox(query: string): { mailbox: string; rest: string } {
  const m = /(^|\s)mailbox:("([^"]*)"|(\S+))/i.exec(query);
  if (!m) return { mailbox: "", rest: query.trim() };
  const mailbox = (m[3] ?? m[4] ?? "").trim();
  const rest = (query.slice(0, m.index) + " " + query.slice(m.index + m[0].length)).trim();
  return { mailbox, rest };
}

export function listUrl(query: string, start: number, limit: number): string {
  const page = `start=${start}&limit=${limit}`;
  const q = query.trim();
  if (!q) return `api/v1/messages?${page}`;
  const { mailbox, rest } = parseMailbox(q);
  if (mailbox && !rest) return `api/v1/mailbox/${enc(mailbox)}?${page}`;
  const text = mailbox ? `addressed:${mailbox} ${rest}` : q;
  return `api/v1/search?query=${enc(text)}&${page}&tz=${enc(zone())}`;
}

export function list(query: string, start: number, limit: number, signal?: AbortSignal) {
  return getJSON<ListPage>(listUrl(query, start, limit), signal);
}

export function message(id: string, signal?: AbortSignal) {
  return getJSON<Message>(`api/v1/message/${enc(id)}`, signal);
}

export function headers(id: string, signal?: AbortSignal) {
  return getJSON<Record<string, string[]>>(`api/v1/message/${enc(id)}/headers`, signal);
}

export const rawUrl = (id: string) => `api/v1/message/${enc(id)}/raw`;
export const partUrl = (id: string, part: string) =>
  `api/v1/message/${enc(id)}/part/${enc(part)}`;
export const thumbUrl = (id: string, part: string) => `${partUrl(id, part)}/thumb`;
/** A part shown in the browser (served inline, under the sandbox policy). */
export const viewPartUrl = (id: string, part: string) => `view/${enc(id)}/part/${enc(part)}`;
export const rawDownloadUrl = (id: string) => `${rawUrl(id)}?dl=1`;
export const htmlBodyUrl = (id: string) => `view/${enc(id)}.html`;
export const textBodyUrl = (id: string) => `view/${enc(id)}.txt`;

/** Mailpit's HTMLCheckResponse (caniemail.com's data). */
export interface HtmlCheckResult {
  Name: string;
  Family: string;
  Platform: string;
  Version: string;
  Support: "yes" | "no" | "partial" | string;
  NoteNumber: string;
}
export interface HtmlCheckWarning {
  Slug: string;
  Title: string;
  Description: string;
  URL: string;
  Category: string;
  NotesByNumber: Record<string, string>;
  Results: HtmlCheckResult[];
  Score: { Found: number; Supported: number; Partial: number; Unsupported: number };
}
export interface HtmlCheck {
  Platforms: Record<string, string[]>;
  Total: { Nodes: number; Tests: number; Supported: number; Partial: number; Unsupported: number };
  Warnings: HtmlCheckWarning[] | null;
}
export const htmlCheck = (id: string, signal?: AbortSignal) =>
  getJSON<HtmlCheck>(`api/v1/message/${enc(id)}/html-check`, signal);

export interface LinkCheck {
  Errors: number;
  Links: { URL: string; StatusCode: number; Status: string }[] | null;
}
export const linkCheck = (id: string, follow: boolean, signal?: AbortSignal) =>
  getJSON<LinkCheck>(`api/v1/message/${enc(id)}/link-check${follow ? "?follow=true" : ""}`, signal);

/** Mailpit's spam check answers: SpamAssassin's (sa-check) and Rspamd's (rspamd-check). */
export type SpamService = "spamassassin" | "rspamd";
export interface SpamCheck {
  IsSpam: boolean;
  Error: string;
  Score: number;
  Threshold?: number; // Rspamd only
  Action?: string; // Rspamd only
  Rules: { Score: number; Name: string; Description: string }[] | null;
}
export const spamCheck = (id: string, service: SpamService, signal?: AbortSignal) =>
  getJSON<SpamCheck>(`api/v1/message/${enc(id)}/${service === "rspamd" ? "rspamd-check" : "sa-check"}`, signal);

/** The raw message as text: bytes decoded as UTF-8 (invalid sequences become U+FFFD). */
export async function raw(id: string, signal?: AbortSignal): Promise<{ text: string; bytes: number }> {
  const r = await check(await fetch(rawUrl(id), { cache: "no-store", signal }));
  const buf = await r.arrayBuffer();
  return { text: new TextDecoder("utf-8").decode(buf), bytes: buf.byteLength };
}

export const setRead = (ids: string[], read: boolean) => send("PUT", "api/v1/messages", { IDs: ids, Read: read });

/** Marks every message of a list view read or unread. */
export async function setReadAll(query: string, read: boolean): Promise<void> {
  const q = query.trim();
  const { mailbox } = parseMailbox(q);
  if (!q) {
    await send("PUT", "api/v1/messages", { Read: read });
  } else if (!mailbox) {
    await send("PUT", `api/v1/messages?tz=${enc(zone())}`, { Search: q, Read: read });
  } else {
    const ids = await allIds(q);
    for (let i = 0; i < ids.length; i += 1000) await setRead(ids.slice(i, i + 1000), read);
  }
}

export const remove = (ids: string[]) => send("DELETE", "api/v1/messages", { IDs: ids });

/** Deletes every message of a list view. */
export async function removeAll(query: string): Promise<void> {
  const q = query.trim();
  const { mailbox } = parseMailbox(q);
  if (!q) {
    await send("DELETE", "api/v1/messages");
  } else if (!mailbox) {
    await send("DELETE", `api/v1/search?query=${enc(q)}&tz=${enc(zone())}`);
  } else {
    const ids = await allIds(q);
    for (let i = 0; i < ids.length; i += 1000) await remove(ids.slice(i, i + 1000));
  }
}

/** Every summary of a list view, a page of 1000 at a time (for bulk tagging). */
export async function allSummaries(query: string): Promise<Summary[]> {
  const out: Summary[] = [];
  for (let start = 0; ; start += 1000) {
    const p = await list(query, start, 1000);
    const got = p.messages ?? [];
    out.push(...got);
    if (got.length < 1000) return out;
  }
}

async function allIds(query: string): Promise<string[]> {
  return (await allSummaries(query)).map((m) => m.ID);
}

export const setTags = (ids: string[], tags: string[]) => send("PUT", "api/v1/tags", { IDs: ids, Tags: tags });
export const allTags = () => getJSON<string[]>("api/v1/tags");
export const release = (id: string, to: string[]) => send("POST", `api/v1/message/${enc(id)}/release`, { To: to });

export interface SendRequest {
  From: { Email: string; Name?: string };
  To: { Email: string; Name?: string }[];
  Subject: string;
  Text?: string;
  HTML?: string;
}
export async function sendMessage(req: SendRequest): Promise<string> {
  const r = await send("POST", "api/v1/send", req);
  const body = (await r.json()) as { ID?: string };
  return body.ID ?? "";
}

/** What the server offers beyond the core routes, found by asking it once. */
export interface Capabilities {
  tags: boolean; // GET/PUT api/v1/tags
  send: boolean; // POST api/v1/send
  release: boolean; // POST api/v1/message/{ID}/release, relay configured
  label: string;
  hideDeleteAll: boolean;
  spam: SpamService | ""; // the spam check the server runs, if one is configured
  relay?: Relay; // the relay's settings, shown when releasing
}

export async function probe(): Promise<Capabilities> {
  const ask = (url: string) => fetch(url, { cache: "no-store" }).catch(() => null);
  const [tags, sendRoute, webui] = await Promise.all([ask("api/v1/tags"), ask("api/v1/send"), ask("api/v1/webui")]);
  let cfg: WebUIConfig = {};
  if (webui && webui.ok) {
    try {
      cfg = (await webui.json()) as WebUIConfig;
    } catch {
      cfg = {};
    }
  }
  return {
    tags: !!tags && tags.ok,
    // The route exists when it refuses GET (405) rather than not knowing the path (404).
    send: !!sendRoute && sendRoute.status === 405,
    release: !!cfg.MessageRelay?.Enabled,
    relay: cfg.MessageRelay,
    label: cfg.Label ?? "",
    hideDeleteAll: !!cfg.HideDeleteAllButton,
    spam: cfg.SpamAssassin ? "spamassassin" : cfg.Rspamd ? "rspamd" : "",
  };
}
