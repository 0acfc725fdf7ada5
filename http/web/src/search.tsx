// The search box and what it offers when it gets focus: the searches made before (kept
// in localStorage) and the search language's operators, each with an example that a
// click puts into the box. Also the tag list with how many messages carry each tag.
import { useEffect, useRef, useState } from "preact/hooks";
import * as api from "./api";

const RECENT_KEY = "inlet.recentSearches";
const RECENT_MAX = 8;

export function recentSearches(): string[] {
  try {
    const v = JSON.parse(localStorage.getItem(RECENT_KEY) ?? "[]") as unknown;
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string").slice(0, RECENT_MAX) : [];
  } catch {
    return [];
  }
}

export function rememberSearch(q: string) {
  const t = q.trim();
  if (!t) return;
  const l = [t, ...recentSearches().filter((x) => x !== t)].slice(0, RECENT_MAX);
  localStorage.setItem(RECENT_KEY, JSON.stringify(l));
}

// The store's search language (Mailpit's), and the page's mailbox: term.
export const OPERATORS: [string, string, string][] = [
  ["from:", "from:ann", "sender's name or address contains"],
  ["to:", "to:example.com", "a To recipient contains"],
  ["cc: bcc:", "cc:carol", "a Cc or Bcc recipient contains"],
  ["reply-to:", "reply-to:support", "Reply-To contains"],
  ["addressed:", "addressed:bob@example.com", "From, To, Cc, Bcc or Reply-To contains"],
  ["subject:", 'subject:"quarterly report"', "the subject contains (quotes for phrases)"],
  ["message-id:", "message-id:abc@example.com", "the Message-ID is"],
  ["tag:", "tag:invoices", "tagged with"],
  ["is:", "is:unread", "is:read, is:unread, is:tagged"],
  ["has:", "has:attachment", "has:attachment, has:inline"],
  ["after: before:", "after:2026-01-01", "received on or after, or before, a day"],
  ["larger: smaller:", "larger:1M", "size above or below (K, M)"],
  ["mailbox:", "mailbox:box@example.com", "delivered to this address (the SMTP envelope)"],
  ["-", "-is:read", "not: any term negated"],
  ["words", "invoice", "anywhere in the subject, addresses or text"],
];

export function SearchBox(p: {
  value: string;
  onInput: (v: string) => void;
  onSubmit: (q: string) => void;
  inputRef: { current: HTMLInputElement | null };
}) {
  const [open, setOpen] = useState(false);
  const [recent, setRecent] = useState<string[]>([]);
  const form = useRef<HTMLFormElement>(null);
  const show = () => {
    setRecent(recentSearches());
    setOpen(true);
  };
  const submit = (q: string) => {
    setOpen(false);
    rememberSearch(q);
    p.onSubmit(q);
  };
  // An operator's example goes into the box (added to what is typed) and focus returns.
  const insert = (ex: string) => {
    const v = p.value.trim();
    p.onInput(v ? `${v} ${ex}` : ex);
    p.inputRef.current?.focus();
  };
  return (
    <form
      class="search"
      role="search"
      ref={form}
      onSubmit={(e) => {
        e.preventDefault();
        submit(p.value.trim());
      }}
      onFocusOut={(e) => {
        const to = e.relatedTarget as Node | null;
        if (!to || !form.current?.contains(to)) setOpen(false);
      }}
      onKeyDown={(e) => {
        // Esc in the box closes the list and leaves the box (the page's key handler);
        // on one of the list's buttons it closes the list and returns to the box.
        if (e.key === "Escape" && open) {
          setOpen(false);
          if (e.target !== p.inputRef.current) {
            p.inputRef.current?.focus();
            e.stopPropagation();
          }
        }
      }}
    >
      <label class="vh" for="q">
        Search messages
      </label>
      <input
        id="q"
        ref={p.inputRef}
        type="search"
        autocomplete="off"
        spellcheck={false}
        placeholder="Search: from:ann subject:invoice is:unread tag:work"
        aria-describedby={open ? "search-help" : undefined}
        value={p.value}
        onFocus={show}
        onClick={() => !open && show()}
        onInput={(e) => p.onInput((e.currentTarget as HTMLInputElement).value)}
      />
      <button type="submit">Search</button>
      {open ? (
        <div class="search-help" id="search-help">
          {recent.length ? (
            <section aria-labelledby="recent-h">
              <h2 id="recent-h">Recent searches</h2>
              <ul class="recent">
                {recent.map((q) => (
                  <li key={q}>
                    <button type="button" class="chip" onClick={() => submit(q)}>
                      {q}
                    </button>
                  </li>
                ))}
              </ul>
            </section>
          ) : null}
          <section aria-labelledby="ops-h">
            <h2 id="ops-h">Search operators</h2>
            <table class="ops">
              <tbody>
                {OPERATORS.map(([op, ex, what]) => (
                  <tr key={op}>
                    <th scope="row">
                      <code>{op}</code>
                    </th>
                    <td>
                      <button type="button" class="example" aria-label={`Add ${ex} to the search`} onClick={() => insert(ex)}>
                        {ex}
                      </button>
                    </td>
                    <td class="muted">{what}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            <p class="muted">Terms combine: every one must match. Dates are in your time zone.</p>
          </section>
        </div>
      ) : null}
    </form>
  );
}

/** Each tag with its number of messages (a `tag:` search's total, asked when shown). */
export function TagList(p: { tags: string[]; query: (t: string) => string; current: string; onPick: (t: string) => void }) {
  const [counts, setCounts] = useState<Map<string, number>>(new Map());
  useEffect(() => {
    const ac = new AbortController();
    const got = new Map<string, number>();
    // A few at a time: a long tag list must not flood the server.
    const names = p.tags.slice(0, 200);
    let next = 0;
    const worker = async () => {
      while (next < names.length && !ac.signal.aborted) {
        const t = names[next++];
        try {
          const r = await api.list(p.query(t), 0, 1, ac.signal);
          got.set(t, r.messages_count ?? r.total);
          setCounts(new Map(got));
        } catch {
          // aborted, or the search failed: the tag shows without a count
        }
      }
    };
    void Promise.all([worker(), worker(), worker(), worker()]);
    return () => ac.abort();
  }, [p.tags.join("\n")]);
  if (!p.tags.length) return <p class="muted tag-none">No tags yet. Add one from a message, or to a selection.</p>;
  return (
    <ul class="tag-list">
      {p.tags.map((t) => {
        const q = p.query(t);
        const n = counts.get(t);
        return (
          <li key={t}>
            <a
              class={`tag-item${p.current === q ? " on" : ""}`}
              href={`?q=${encodeURIComponent(q)}`}
              aria-current={p.current === q ? "page" : undefined}
              onClick={(e) => {
                if (e.ctrlKey || e.metaKey || e.shiftKey) return;
                e.preventDefault();
                p.onPick(t);
              }}
            >
              <span class="tag">{t}</span>
              <span class="n">{n === undefined ? "…" : n.toLocaleString()}</span>
              <span class="vh"> messages</span>
            </a>
          </li>
        );
      })}
    </ul>
  );
}
