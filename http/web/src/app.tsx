// The page: a header with the search, the message list and the open message side by
// side (stacked on a phone), bulk actions over a selection, live updates and keyboard use.
import { useEffect, useMemo, useReducer, useRef, useState } from "preact/hooks";
import * as api from "./api";
import type { Capabilities, Message } from "./api";
import { ComposeDialog, HelpDialog, ReleaseDialog } from "./dialogs";
import { Bell, Contrast, Pencil } from "./icons";
import { List } from "./list";
import { connect, Notifier, showUnread, type LiveState } from "./live";
import { MessageView, prefetch } from "./message";
import { ListModel } from "./model";
import * as route from "./route";
import type { Route, Tab } from "./route";
import { rememberSearch, SearchBox, TagList } from "./search";
import { listWidth, savedWidth, Splitter } from "./split";
import * as theme from "./theme";

const noCaps: Capabilities = { tags: false, send: false, release: false, label: "", hideDeleteAll: false, spam: "" };

/** The search for one tag: `tag:NAME`, quoted when the name has a space. */
export function tagQuery(tag: string): string {
  return /[\s"]/.test(tag) ? `tag:"${tag.replace(/"/g, "")}"` : `tag:${tag}`;
}

function isTyping(t: EventTarget | null): boolean {
  const el = t as HTMLElement | null;
  if (!el || !el.tagName) return false;
  return /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName) || el.isContentEditable;
}

export function App({ model }: { model: ListModel }) {
  const [r, setR] = useState<Route>(route.current);
  const [, redraw] = useReducer((n: number, _: null) => n + 1, 0);
  const bump = () => redraw(null);
  const [caps, setCaps] = useState<Capabilities>(noCaps);
  const [live, setLive] = useState<LiveState>("connecting");
  const [cursor, setCursor] = useState(0);
  const [focusCursor, setFocusCursor] = useState(0);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [allSelected, setAllSelected] = useState(false);
  const [excluded, setExcluded] = useState<Set<string>>(new Set());
  const [toast, setToast] = useState("");
  const [dialog, setDialog] = useState<"" | "help" | "compose" | "release">("");
  const [releasing, setReleasing] = useState<Message | null>(null);
  const [th, setTh] = useState<theme.Theme>(theme.current);
  const [gone, setGone] = useState<Set<string>>(new Set());
  const notifier = useMemo(() => new Notifier(), []);
  const [notify, setNotify] = useState(notifier.enabled);
  const anchor = useRef(-1);
  const scrollTo = useRef<((i: number) => void) | null>(null);
  const search = useRef<HTMLInputElement>(null);
  const [searchText, setSearchText] = useState(r.q);
  const [listW, setListW] = useState(savedWidth);
  const [winW, setWinW] = useState(innerWidth);
  const [tagsOpen, setTagsOpen] = useState(false);
  const pickTag = (t: string) => {
    const q = tagQuery(t);
    rememberSearch(q);
    setTagsOpen(false);
    route.go({ q, m: "", view: "" });
  };
  const [listHidden, setListHidden] = useState(() => localStorage.getItem("inlet.listHidden") === "1");
  useEffect(() => {
    const f = () => setWinW(innerWidth);
    addEventListener("resize", f);
    return () => removeEventListener("resize", f);
  }, []);
  const toggleList = () => {
    localStorage.setItem("inlet.listHidden", listHidden ? "0" : "1");
    setListHidden(!listHidden);
  };

  useEffect(() => model.subscribe(bump), [model]);
  useEffect(
    () =>
      route.subscribe((n) => {
        setR(n);
        setSearchText(n.q);
      }),
    [],
  );
  useEffect(() => connect(model, setLive), [model]);
  // The optional routes are asked about once the first list is there (it goes first).
  const probed = useRef(false);
  useEffect(() => {
    if (probed.current || (!model.loaded && !model.error)) return;
    probed.current = true;
    void api.probe().then(setCaps);
  });

  // A new view: a fresh list, nothing selected, the cursor at the top.
  useEffect(() => {
    model.setQuery(r.q);
    setSelected(new Set());
    setAllSelected(false);
    setExcluded(new Set());
    setCursor(0);
    anchor.current = -1;
  }, [r.q, model]);

  useEffect(
    () =>
      model.onEvent((e) => {
        if (e.type === "new" && e.summary) notifier.add(e.summary.From, e.summary.Subject);
        if (e.type === "delete") setGone((g) => (g.has(e.id) ? g : new Set(g).add(e.id)));
      }),
    [model, notifier],
  );

  useEffect(() => showUnread(model.storeUnread, caps.label), [model.storeUnread, caps.label]);

  const marked = useRef(false);
  useEffect(() => {
    if (!marked.current && model.loaded && model.row(0)) {
      marked.current = true;
      requestAnimationFrame(() => performance.mark("inlet:first-list"));
    }
  });

  const flash = (text: string) => {
    setToast(text);
    window.setTimeout(() => setToast((t) => (t === text ? "" : t)), 4000);
  };
  const fail = (e: unknown) => flash(`Failed: ${e instanceof Error ? e.message : String(e)}`);

  // The view changes once the message is there, so the list's new width and the message
  // take one render and one layout (not a "Loading" frame first); a slow server gets the
  // "Loading" view after 150 ms. Only the latest of quick successive opens goes through.
  const opening = useRef(0);
  const pendingOpen = useRef(""); // the message being fetched to be opened: where j/k go on from
  const open = (id: string, i: number, replace = false) => {
    setCursor(i);
    const to = { q: r.q, m: id, view: r.m ? r.view : "" } as const;
    const n = ++opening.current;
    pendingOpen.current = "";
    if (id === r.m) return route.go(to, replace);
    pendingOpen.current = id;
    let done = false;
    const go = () => {
      if (done || n !== opening.current) return;
      done = true;
      pendingOpen.current = "";
      route.go(to, replace);
    };
    prefetch(id).then(go, go);
    setTimeout(go, 150);
  };
  const closeMessage = () => {
    opening.current++; // a message still being fetched is not opened after all
    pendingOpen.current = "";
    route.go({ q: r.q, m: "", view: "" });
    setFocusCursor((n) => n + 1);
  };

  const isSel = (id: string) => (allSelected ? !excluded.has(id) : selected.has(id));
  const nSelected = allSelected ? Math.max(0, model.total - excluded.size) : selected.size;

  const toggle = async (i: number, id: string, shift: boolean) => {
    setCursor(i);
    if (allSelected) {
      const ex = new Set(excluded);
      if (ex.has(id)) ex.delete(id);
      else ex.add(id);
      setExcluded(ex);
      return;
    }
    const next = new Set(selected);
    if (shift && anchor.current >= 0) {
      await model.load(anchor.current, i);
      const on = !selected.has(id);
      for (const m of model.range(anchor.current, i)) on ? next.add(m.ID) : next.delete(m.ID);
    } else if (next.has(id)) next.delete(id);
    else next.add(id);
    anchor.current = i;
    setSelected(next);
  };
  const clearSelection = () => {
    setSelected(new Set());
    setAllSelected(false);
    setExcluded(new Set());
    anchor.current = -1;
  };

  /** The IDs acted on: the selection, or every result of the view when all are selected. */
  const targets = async (): Promise<string[] | "all"> => {
    if (!allSelected) return [...selected];
    if (!excluded.size) return "all";
    return (await api.allSummaries(r.q)).map((m) => m.ID).filter((id) => !excluded.has(id));
  };

  const bulkRead = async (read: boolean) => {
    try {
      const t = await targets();
      if (t === "all") await api.setReadAll(r.q, read);
      else {
        for (let k = 0; k < t.length; k += 1000) await api.setRead(t.slice(k, k + 1000), read);
        model.patch(t, { Read: read });
      }
      flash(`Marked ${t === "all" ? nSelected : t.length} ${read ? "read" : "unread"}`);
      model.reload();
    } catch (e) {
      fail(e);
    }
  };

  const bulkDelete = async () => {
    const n = nSelected;
    if (n > 1 && !confirm(`Delete ${n} messages?`)) return;
    try {
      const t = await targets();
      if (t === "all") await api.removeAll(r.q);
      else for (let k = 0; k < t.length; k += 1000) await api.remove(t.slice(k, k + 1000));
      if (r.m && (t === "all" || t.includes(r.m))) route.go({ q: r.q, m: "", view: "" });
      clearSelection();
      flash(`Deleted ${n} message${n === 1 ? "" : "s"}`);
      model.reload();
    } catch (e) {
      fail(e);
    }
  };

  const bulkTag = async (tag: string, add: boolean) => {
    const name = tag.trim();
    if (!name) return;
    try {
      const t = await targets();
      const ids = new Set(t === "all" ? [] : t);
      // PUT api/v1/tags sets a message's whole tag list: group messages by their new list.
      const rows = t === "all" || [...ids].some((id) => model.position(id) === undefined)
        ? (await api.allSummaries(r.q)).filter((m) => t === "all" || ids.has(m.ID))
        : [...ids].map((id) => model.row(model.position(id)!)!);
      const groups = new Map<string, { tags: string[]; ids: string[] }>();
      for (const m of rows) {
        const cur = m.Tags ?? [];
        const tags = add ? (cur.includes(name) ? cur : [...cur, name]) : cur.filter((x) => x !== name);
        if (tags.length === cur.length && tags.every((x, k) => x === cur[k])) continue;
        const key = JSON.stringify(tags);
        const g = groups.get(key) ?? { tags, ids: [] };
        g.ids.push(m.ID);
        groups.set(key, g);
      }
      for (const g of groups.values())
        for (let k = 0; k < g.ids.length; k += 1000) await api.setTags(g.ids.slice(k, k + 1000), g.tags);
      flash(`${add ? "Tagged" : "Untagged"} ${rows.length} message${rows.length === 1 ? "" : "s"}`);
      model.reload();
    } catch (e) {
      fail(e);
    }
  };

  const deleteOne = async (id: string) => {
    try {
      const at = model.position(id);
      await api.remove([id]);
      flash("Deleted 1 message");
      // Open the next message in the list, as mail clients do, or go back to the list.
      const next = at === undefined ? undefined : model.row(at + 1);
      if (r.m === id) {
        if (next && !matchMedia("(max-width: 640px)").matches) open(next.ID, at!, true);
        else route.go({ q: r.q, m: "", view: "" }, true);
      }
      model.reload();
    } catch (e) {
      fail(e);
    }
  };

  /** Opens the message before (-1) or after (+1) the open one in the list. */
  const step = async (d: number) => {
    const from = pendingOpen.current || r.m;
    const at = (from ? model.position(from) : undefined) ?? cursor;
    const n = at + d;
    if (n < 0 || n >= model.total) return;
    if (!model.row(n)) await model.load(n, n);
    const m = model.row(n);
    if (!m) return;
    setCursor(n);
    scrollTo.current?.(n);
    open(m.ID, n, true);
  };
  const openPos = r.m ? model.position(r.m) : undefined;

  const move = (d: number) => {
    // The first key press goes to the list: it focuses the cursor's row where it is.
    const inRows = !!document.activeElement?.closest?.(".list-rows");
    const n = r.m || inRows ? Math.max(0, Math.min(model.total - 1, cursor + d)) : cursor;
    setCursor(n);
    scrollTo.current?.(n);
    setFocusCursor((k) => k + 1);
    if (r.m) {
      const pos = pendingOpen.current ? model.position(pendingOpen.current) : openPos;
      if (pos !== undefined && pos !== cursor) return void step(d);
      const m = model.row(n);
      if (m && m.ID !== r.m) open(m.ID, n, true);
    }
  };

  // Keys are read by one listener that calls the latest render's handler: a second key
  // pressed before effects rerun must see the state the first one left.
  const keyHandler = useRef<(e: KeyboardEvent) => void>(() => {});
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => keyHandler.current(e);
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, []);
  {
    const onKey = (e: KeyboardEvent) => {
      if (e.ctrlKey || e.metaKey || e.altKey || dialog) return;
      if (isTyping(e.target)) {
        if (e.key === "Escape" && e.target === search.current) search.current?.blur();
        return;
      }
      const inList = !!(e.target as HTMLElement)?.closest?.(".list-pane") || e.target === document.body;
      switch (e.key) {
        case "j":
          move(1);
          break;
        case "k":
          move(-1);
          break;
        case "ArrowDown":
        case "ArrowUp":
          if (!inList) return;
          move(e.key === "ArrowDown" ? 1 : -1);
          break;
        case "Home":
        case "End":
          if (!inList) return;
          move(e.key === "Home" ? -model.total : model.total);
          break;
        case "Enter": {
          if ((e.target as HTMLElement)?.tagName === "A" || (e.target as HTMLElement)?.tagName === "BUTTON") return;
          const m = model.row(cursor);
          if (m) open(m.ID, cursor);
          break;
        }
        case "x": {
          const m = model.row(cursor);
          if (m) void toggle(cursor, m.ID, e.shiftKey);
          break;
        }
        case "X": {
          const m = model.row(cursor);
          if (m) void toggle(cursor, m.ID, true);
          break;
        }
        case "Delete":
        case "#":
          if (nSelected) void bulkDelete();
          else if (r.m) void deleteOne(r.m);
          else {
            const m = model.row(cursor);
            if (m) void deleteOne(m.ID);
          }
          break;
        case "/":
          search.current?.focus();
          search.current?.select();
          break;
        case "?":
          setDialog("help");
          break;
        case "Escape":
          if (nSelected) clearSelection();
          else if (r.m) closeMessage();
          else return;
          break;
        default:
          return;
      }
      e.preventDefault();
    };
    keyHandler.current = onKey;
  }

  const setRead = async (id: string, read: boolean) => {
    try {
      await api.setRead([id], read);
      model.patch([id], { Read: read });
    } catch (e) {
      fail(e);
    }
  };
  const setTags = async (id: string, tags: string[]) => {
    try {
      await api.setTags([id], tags);
      model.patch([id], { Tags: tags });
    } catch (e) {
      fail(e);
    }
  };


  const count = model.loaded
    ? `${model.total.toLocaleString()} ${r.q ? (model.total === 1 ? "result" : "results") : model.total === 1 ? "message" : "messages"}${model.unread ? `, ${model.unread.toLocaleString()} unread` : ""}`
    : model.error
      ? ""
      : "Loading…";

  return (
    <div class={`app${r.m ? " has-msg" : ""}${r.m && listHidden ? " list-hidden" : ""}`}>
      <a class="skip" href="#list-start">
        Skip to messages
      </a>
      <header class="top">
        <h1 class="brand">
          <a
            href={route.href({ q: "", m: "", view: "" })}
            onClick={(e) => {
              e.preventDefault();
              route.go({ q: "", m: "", view: "" });
            }}
          >
            inlet
          </a>
          {caps.label ? <span class="label">{caps.label}</span> : null}
        </h1>
        <SearchBox
          value={searchText}
          inputRef={search}
          onInput={setSearchText}
          onSubmit={(q) => {
            setSearchText(q);
            if (q !== r.q) route.go({ q, m: "", view: "" });
          }}
        />
        <div class="top-tools">
          <span class={`live ${live}`} role="status" title="Live updates">
            <span class="live-dot" aria-hidden="true" />
            {live === "live" ? "Live" : live === "connecting" ? "Connecting" : "Reconnecting"}
          </span>
          {caps.send ? (
            <button type="button" onClick={() => setDialog("compose")}>
              <Pencil />
              <span class="lbl">Compose</span>
            </button>
          ) : null}
          <button
            type="button"
            aria-pressed={notify}
            title="Notify me of new messages while this tab is hidden"
            onClick={async () => setNotify(await notifier.toggle())}
          >
            <Bell off={!notify} />
            <span class="lbl">{notify ? "Notifications on" : "Notifications off"}</span>
          </button>
          <button
            type="button"
            title="Colour theme: system, light or dark"
            onClick={() => {
              const n = theme.next(th);
              theme.apply(n);
              setTh(n);
            }}
          >
            <Contrast />
            <span class="lbl">Theme: {th}</span>
          </button>
          <button type="button" title="Keyboard shortcuts" onClick={() => setDialog("help")}>
            <span aria-hidden="true">?</span>
            <span class="vh">Keyboard shortcuts</span>
          </button>
        </div>
      </header>
      <main class="panes" style={{ "--list-w": `${listWidth(listW, winW)}px` }}>
        <section class="list-pane" aria-label="Message list">
          <div class="list-bar" id="list-start">
            <input
              type="checkbox"
              class="check"
              aria-label={`Select all ${model.total} ${r.q ? "results" : "messages"}`}
              checked={allSelected && !excluded.size}
              indeterminate={(allSelected && excluded.size > 0) || (!allSelected && selected.size > 0)}
              disabled={!model.total}
              onClick={(e) => {
                e.preventDefault();
                if (allSelected || selected.size) clearSelection();
                else setAllSelected(true);
              }}
            />
            {nSelected ? (
              <div class="bulk" role="toolbar" aria-label="Selected messages">
                <span class="n">{nSelected.toLocaleString()} selected</span>
                <button type="button" onClick={() => bulkRead(true)}>
                  Mark read
                </button>
                <button type="button" onClick={() => bulkRead(false)}>
                  Mark unread
                </button>
                {caps.tags ? <BulkTag known={model.tags} onTag={bulkTag} /> : null}
                {caps.hideDeleteAll && allSelected && !r.q ? null : (
                  <button type="button" class="danger" onClick={bulkDelete}>
                    Delete
                  </button>
                )}
                <button type="button" onClick={clearSelection}>
                  Clear
                </button>
              </div>
            ) : (
              <span class="count" aria-live="polite">
                {count}
                {r.q ? (
                  <>
                    {" · "}
                    <a
                      href={route.href({ q: "", m: "", view: "" })}
                      onClick={(e) => {
                        e.preventDefault();
                        route.go({ q: "", m: "", view: "" });
                      }}
                    >
                      show all
                    </a>
                  </>
                ) : null}
              </span>
            )}
            {caps.tags && !nSelected ? (
              <button
                type="button"
                class="tags-toggle"
                aria-expanded={tagsOpen}
                aria-controls="tag-panel"
                onClick={() => setTagsOpen(!tagsOpen)}
              >
                Tags{model.tags.length ? ` (${model.tags.length})` : ""}
              </button>
            ) : null}
          </div>
          {tagsOpen ? (
            <nav class="tag-panel" id="tag-panel" aria-label="Tags">
              <TagList tags={model.tags} query={tagQuery} current={r.q} onPick={pickTag} />
            </nav>
          ) : null}
          {model.error ? <p class="error list-error">Could not load the list: {model.error}</p> : null}
          {model.loaded && model.total === 0 ? (
            <p class="empty">{r.q ? "Nothing matches this search." : "No messages yet. Send one to the SMTP port."}</p>
          ) : null}
          <List
            model={model}
            query={r.q}
            open={r.m}
            cursor={cursor}
            focusCursor={focusCursor}
            isSelected={isSel}
            onOpen={(id, i) => open(id, i)}
            onToggle={(i, id, shift) => void toggle(i, id, shift)}
            onCursor={setCursor}
            scrollRef={scrollTo}
            onTag={pickTag}
            width={winW <= 640 || !r.m ? winW : listHidden ? 0 : listWidth(listW, winW)}
          />
        </section>
        {r.m && !listHidden ? <Splitter width={listWidth(listW, winW)} windowW={winW} onWidth={setListW} /> : null}
        <section class="msg-pane" aria-label="Message">
          {r.m ? (
            <MessageView
              id={r.m}
              tab={r.view}
              caps={caps}
              knownTags={model.tags}
              gone={gone.has(r.m)}
              onTab={(t: Tab) => route.go({ ...r, view: t }, true)}
              onBack={closeMessage}
              listHidden={listHidden}
              onToggleList={toggleList}
              canPrev={openPos !== undefined ? openPos > 0 : cursor > 0}
              canNext={openPos !== undefined ? openPos < model.total - 1 : cursor < model.total - 1}
              onStep={(d) => void step(d)}
              onTag={pickTag}
              onDelete={deleteOne}
              onRead={setRead}
              onTags={setTags}
              onRelease={(m) => {
                setReleasing(m);
                setDialog("release");
              }}
              onLoaded={(m) => model.patch([m.ID], { Read: true })}
            />
          ) : (
            <div class="msg-empty none">
              <p>Select a message to read it.</p>
              <p class="muted">
                Keys: <kbd>j</kbd>/<kbd>k</kbd> move, <kbd>Enter</kbd> open, <kbd>/</kbd> search, <kbd>?</kbd> all keys.
              </p>
            </div>
          )}
        </section>
      </main>
      <div class="toast" role="status" aria-live="polite">
        {toast}
      </div>
      {dialog === "help" ? <HelpDialog onClose={() => setDialog("")} /> : null}
      {dialog === "compose" ? (
        <ComposeDialog
          onClose={() => setDialog("")}
          onSent={(id) => {
            setDialog("");
            flash("Message sent");
            if (id) route.go({ q: r.q, m: id, view: "" });
          }}
        />
      ) : null}
      {dialog === "release" && releasing ? (
        <ReleaseDialog
          message={releasing}
          relay={caps.relay}
          onClose={() => setDialog("")}
          onDone={(n, deleted) => {
            setDialog("");
            flash(`Released to ${n} recipient${n === 1 ? "" : "s"}${deleted ? " and deleted" : ""}`);
            if (deleted) {
              if (r.m === releasing.ID) route.go({ q: r.q, m: "", view: "" }, true);
              model.reload();
            }
          }}
        />
      ) : null}
    </div>
  );
}

function BulkTag({ known, onTag }: { known: string[]; onTag: (t: string, add: boolean) => void }) {
  const [text, setText] = useState("");
  return (
    <form
      class="bulk-tag"
      onSubmit={(e) => {
        e.preventDefault();
        onTag(text, true);
        setText("");
      }}
    >
      <input
        type="text"
        list="bulk-known-tags"
        value={text}
        placeholder="Tag"
        aria-label="Tag to add or remove"
        onInput={(e) => setText((e.currentTarget as HTMLInputElement).value)}
      />
      <datalist id="bulk-known-tags">
        {known.map((t) => (
          <option key={t} value={t} />
        ))}
      </datalist>
      <button type="submit">Add tag</button>
      <button
        type="button"
        onClick={() => {
          onTag(text, false);
          setText("");
        }}
      >
        Remove tag
      </button>
    </form>
  );
}
