// The page's state in its URL: `?q=QUERY&m=ID&view=TAB`. Every list view and every open
// message has its own link; Back and Forward walk the history the page pushes.

export type Tab = "html" | "text" | "source" | "headers" | "raw" | "check" | "links" | "spam";
const tabs: readonly Tab[] = ["html", "text", "source", "headers", "raw", "check", "links", "spam"];

export interface Route {
  q: string; // the search (Mailpit's language, plus mailbox:ADDRESS); "" lists everything
  m: string; // the open message's ID, or ""
  view: Tab | ""; // the message's tab; "" picks HTML when there is any, else text
  // (check: the HTML check, links: the link check, spam: the spam score)
}

export function parse(search: string, hash = ""): Route {
  const p = new URLSearchParams(search);
  const view = p.get("view") ?? "";
  let q = p.get("q") ?? "";
  // Links of the earlier page: "#someone@example.com" was a mailbox.
  if (!q && hash.length > 1 && hash.includes("@")) q = `mailbox:${decodeURIComponent(hash.slice(1))}`;
  return { q, m: p.get("m") ?? "", view: (tabs as readonly string[]).includes(view) ? (view as Tab) : "" };
}

export function href(r: Route): string {
  const p = new URLSearchParams();
  if (r.q) p.set("q", r.q);
  if (r.m) p.set("m", r.m);
  if (r.m && r.view) p.set("view", r.view);
  const s = p.toString();
  return s ? `?${s}` : location.pathname;
}

export function current(): Route {
  return parse(location.search, location.hash);
}

type Listener = (r: Route) => void;
const listeners = new Set<Listener>();

export function subscribe(f: Listener): () => void {
  listeners.add(f);
  return () => listeners.delete(f);
}

function emit() {
  const r = current();
  for (const f of listeners) f(r);
}

addEventListener("popstate", emit);

/** Goes to a route: a new history entry, or (replace) the current one rewritten. */
export function go(r: Route, replace = false) {
  const url = href(r);
  if (url === location.search || (url === location.pathname && !location.search)) {
    if (!location.hash) return;
  }
  if (replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  emit();
}
