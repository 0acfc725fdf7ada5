// A small HTML tokenizer for the "HTML source" tab: it splits markup into classed
// runs of text (tags, attribute names and values, comments, doctype, entities). The
// runs are rendered as text nodes, so the source itself is never parsed as HTML.

export type Kind = "text" | "tag" | "attr" | "value" | "comment" | "doctype" | "entity" | "punct";
export interface Run {
  kind: Kind;
  text: string;
}

const LIMIT = 300000; // characters highlighted; the rest is shown plain

export function tokenize(src: string): Run[] {
  const out: Run[] = [];
  const push = (kind: Kind, text: string) => {
    if (!text) return;
    const last = out[out.length - 1];
    if (last && last.kind === kind) last.text += text;
    else out.push({ kind, text });
  };
  const n = Math.min(src.length, LIMIT);
  let i = 0;
  while (i < n) {
    const lt = src.indexOf("<", i);
    const stop = lt < 0 || lt >= n ? n : lt;
    text(src.slice(i, stop), push);
    i = stop;
    if (i >= n) break;
    if (src.startsWith("<!--", i)) {
      const end = src.indexOf("-->", i + 4);
      const j = end < 0 ? n : Math.min(n, end + 3);
      push("comment", src.slice(i, j));
      i = j;
    } else if (src[i + 1] === "!" || src[i + 1] === "?") {
      const end = src.indexOf(">", i);
      const j = end < 0 ? n : Math.min(n, end + 1);
      push("doctype", src.slice(i, j));
      i = j;
    } else if (/[A-Za-z/]/.test(src[i + 1] ?? "")) {
      i = tag(src, i, n, push);
    } else {
      push("text", "<");
      i++;
    }
  }
  if (src.length > n) push("text", src.slice(n));
  return out;
}

function text(s: string, push: (k: Kind, t: string) => void) {
  const re = /&(#\d+|#x[0-9a-f]+|[a-z][a-z0-9]*);/gi;
  let at = 0;
  for (let m = re.exec(s); m; m = re.exec(s)) {
    push("text", s.slice(at, m.index));
    push("entity", m[0]);
    at = m.index + m[0].length;
  }
  push("text", s.slice(at));
}

function tag(src: string, i: number, n: number, push: (k: Kind, t: string) => void): number {
  const name = /^<\/?[A-Za-z][^\s/>]*/.exec(src.slice(i, Math.min(n, i + 256)));
  const head = name ? name[0] : "<";
  push("punct", head.startsWith("</") ? "</" : "<");
  push("tag", head.replace(/^<\/?/, ""));
  i += head.length;
  while (i < n) {
    const c = src[i];
    if (c === ">") {
      push("punct", ">");
      return i + 1;
    }
    if (c === "/" && src[i + 1] === ">") {
      push("punct", "/>");
      return i + 2;
    }
    if (/\s/.test(c)) {
      let j = i;
      while (j < n && /\s/.test(src[j])) j++;
      push("text", src.slice(i, j));
      i = j;
      continue;
    }
    let j = i;
    while (j < n && !/[\s=>]/.test(src[j]) && !(src[j] === "/" && src[j + 1] === ">")) j++;
    if (j === i) j = i + 1;
    push("attr", src.slice(i, j));
    i = j;
    let k = i;
    while (k < n && /\s/.test(src[k])) k++;
    if (src[k] !== "=") continue;
    push("text", src.slice(i, k));
    push("punct", "=");
    i = k + 1;
    while (i < n && /\s/.test(src[i])) push("text", src[i++]);
    const q = src[i];
    if (q === '"' || q === "'") {
      const end = src.indexOf(q, i + 1);
      const e = end < 0 ? n : Math.min(n, end + 1);
      push("value", src.slice(i, e));
      i = e;
    } else {
      let e = i;
      while (e < n && !/[\s>]/.test(src[e])) e++;
      push("value", src.slice(i, e));
      i = e;
    }
  }
  return i;
}
