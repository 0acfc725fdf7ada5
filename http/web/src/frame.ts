// Prepares a message's HTML for its sandboxed frame.
//
// The HTML is parsed with DOMParser into an inert document (no scripts run, nothing is
// fetched), rewritten, and serialised into the frame's srcdoc:
// - scripts, frames, objects, <base> and <meta http-equiv> are dropped, event-handler
//   attributes and javascript: URLs removed (the frame's sandbox forbids scripts anyway);
// - links open in a new tab (target=_blank, rel=noopener noreferrer);
// - cid: references point at the message's parts (api/v1/message/{ID}/part/{PartID});
// - remote resources (http:, https:, //host) are counted; the frame's own
//   Content-Security-Policy (a <meta> first in its head) refuses them until the user allows
//   them for this message, so no tracker is fetched on open.
import { partUrl, type Part } from "./api";

export interface Prepared {
  srcdoc: string;
  remote: number; // remote resources the HTML refers to
}

const remoteUrl = /^\s*(https?:)?\/\//i;
const urlAttrs = ["src", "background", "poster", "data", "href", "srcset", "lowsrc", "dynsrc"];
const cssUrl = /url\(\s*(['"]?)\s*((?:https?:)?\/\/[^'")\s]+)\s*\1\s*\)|@import\s+(['"])\s*(?:https?:)?\/\//gi;

function rewriteCid(value: string, cid: Map<string, string>): string {
  return value.replace(/cid:([^\s'")]+)/gi, (all, id: string) => {
    let key = id;
    try {
      key = decodeURIComponent(id);
    } catch {
      // keep it as written
    }
    return cid.get(key.toLowerCase()) ?? all;
  });
}

export function prepare(
  html: string,
  messageId: string,
  parts: Part[],
  allowRemote: boolean,
  origin = location.origin,
  base = new URL(".", location.href).pathname,
): Prepared {
  const doc = new DOMParser().parseFromString(html, "text/html");
  const cid = new Map<string, string>();
  for (const p of parts)
    if (p.ContentID) cid.set(p.ContentID.replace(/^<|>$/g, "").toLowerCase(), partUrl(messageId, p.PartID));

  doc.querySelectorAll("script,iframe,frame,frameset,object,embed,applet,base,meta[http-equiv],portal").forEach((e) => e.remove());
  doc.querySelectorAll("link").forEach((e) => {
    if (!/\bstylesheet\b/i.test(e.getAttribute("rel") ?? "")) e.remove();
  });

  let remote = 0;
  for (const el of Array.from(doc.querySelectorAll("*"))) {
    for (const a of Array.from(el.attributes)) {
      const name = a.name.toLowerCase();
      if (name.startsWith("on") || name === "formaction" || name === "srcdoc") {
        el.removeAttribute(a.name);
        continue;
      }
      if (name === "style") {
        const v = rewriteCid(a.value, cid);
        remote += (v.match(cssUrl) ?? []).length;
        if (v !== a.value) el.setAttribute(a.name, v);
        continue;
      }
      if (!urlAttrs.includes(name)) continue;
      const v = a.value;
      if (/^\s*(javascript|vbscript|data:text\/html)/i.test(v)) {
        el.removeAttribute(a.name);
        continue;
      }
      if (name === "href") {
        if (el.tagName === "LINK" && remoteUrl.test(v)) remote++;
        continue;
      }
      const w = rewriteCid(v, cid);
      if (w !== v) el.setAttribute(a.name, w);
      if (remoteUrl.test(w) || (name === "srcset" && /(^|,)\s*(https?:)?\/\//i.test(w))) remote++;
    }
  }
  doc.querySelectorAll("style").forEach((s) => {
    const t = s.textContent ?? "";
    const v = rewriteCid(t, cid);
    remote += (v.match(cssUrl) ?? []).length;
    if (v !== t) s.textContent = v;
  });
  doc.querySelectorAll("a[href], area[href]").forEach((a) => {
    if ((a.getAttribute("href") ?? "").startsWith("#")) return;
    a.setAttribute("target", "_blank");
    a.setAttribute("rel", "noopener noreferrer");
  });

  // The frame's policy. Parts are same-origin URLs under this message's part path.
  const parts_src = `${origin}${base}api/v1/message/${encodeURIComponent(messageId)}/part/`;
  const far = allowRemote ? " http: https:" : "";
  const csp =
    `default-src 'none'; img-src data: ${parts_src}${far}; style-src 'unsafe-inline'${far}; ` +
    `font-src data:${far}; media-src ${parts_src}${far}; form-action 'none'`;
  const head = doc.head ?? doc.documentElement.insertBefore(doc.createElement("head"), doc.body);
  const meta = doc.createElement("meta");
  meta.setAttribute("http-equiv", "Content-Security-Policy");
  meta.setAttribute("content", csp);
  const ref = doc.createElement("meta");
  ref.setAttribute("name", "referrer");
  ref.setAttribute("content", "no-referrer");
  const charset = doc.createElement("meta");
  charset.setAttribute("charset", "utf-8");
  head.prepend(charset, meta, ref);
  return { srcdoc: "<!doctype html>\n" + doc.documentElement.outerHTML, remote };
}
