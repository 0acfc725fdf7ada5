// The message list: one line per message, virtually scrolled. Only the rows on screen
// (and a few around them) exist in the DOM; the scroll area is as tall as the whole list,
// so the scrollbar reaches the oldest of 100,000 messages in one drag and the model
// fetches just that window. Past MAX_PX of height the scroll position maps onto positions
// proportionally (browsers cap element heights at a few million pixels).
import { Component } from "preact";
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import type { Summary } from "./api";
import { shortDate, longDate, who, addr, size } from "./format";
import type { ListModel } from "./model";
import { Paperclip } from "./icons";
import { href } from "./route";

const MAX_PX = 4_000_000;
const OVERSCAN = 8;

export interface ListProps {
  model: ListModel;
  query: string;
  open: string;
  cursor: number;
  focusCursor: number; // bumped when the keyboard moved the cursor: focus it
  isSelected: (id: string) => boolean;
  onOpen: (id: string, index: number) => void;
  onToggle: (index: number, id: string, shift: boolean) => void;
  onCursor: (index: number) => void;
  scrollRef: { current: ((index: number) => void) | null };
  onTag: (tag: string) => void;
  width: number; // the list's width as the page lays it out (known before it is measured)
}

// A list this wide shows a message on one line (sender, recipient, subject, tags, size,
// date); a narrower one (a message open beside it, a tablet, a phone) on two, so the
// subject keeps the whole second line instead of a sliver between the other columns.
const WIDE_PX = 860;
const TIGHT_PX = 440;
const ROW_WIDE = 34;
const ROW_NARROW = 56;

// The sender and recipient columns of a one-line row grow with the list, within limits
// (set here rather than with container query units: resizing the list then restyles once).
const clampPx = (v: number, lo: number, hi: number) => Math.round(Math.min(hi, Math.max(lo, v)));

export function List(p: ListProps) {
  const { model } = p;
  const box = useRef<HTMLDivElement>(null);
  const [scrollTop, setScrollTop] = useState(0);
  const [viewH, setViewH] = useState(600);
  const [measuredW, setViewW] = useState(0);
  // The width the page is giving the list right now: a message opened or closed changes
  // it, and the rows take their new layout in the same render instead of one frame later.
  const hinted = useRef(p.width);
  const viewW = p.width !== hinted.current || !measuredW ? p.width : measuredW;
  hinted.current = p.width;
  const wide = viewW >= WIDE_PX;
  const rowH = wide ? ROW_WIDE : ROW_NARROW;
  const frame = useRef(0);

  const total = model.total;
  const natural = total * rowH;
  const height = Math.min(natural, MAX_PX);
  const scaled = natural > MAX_PX;
  const inView = Math.ceil(viewH / rowH) + 1;

  let first: number;
  let offsetY: number;
  if (!scaled) {
    first = Math.floor(scrollTop / rowH);
    offsetY = first * rowH;
  } else {
    const frac = Math.min(1, scrollTop / Math.max(1, height - viewH));
    const exact = frac * Math.max(0, total - inView + 1);
    first = Math.floor(exact);
    offsetY = scrollTop - (exact - first) * rowH;
  }
  const from = Math.max(0, first - OVERSCAN);
  const to = Math.min(total - 1, first + inView + OVERSCAN);
  offsetY -= (first - from) * rowH;

  useEffect(() => {
    const el = box.current!;
    const ro = new ResizeObserver(() => {
      setViewH(el.clientHeight);
      setViewW(el.clientWidth);
    });
    ro.observe(el);
    return () => ro.disconnect();
  }, []);

  // The list's position restarts with every view.
  useEffect(() => {
    if (box.current) box.current.scrollTop = 0;
    setScrollTop(0);
  }, [p.query]);

  useEffect(() => {
    const anchor = model.row(first);
    model.want(first, Math.min(total - 1, first + inView), anchor?.ID);
  }, [first, inView, total, model]);

  useEffect(() => {
    model.onShift = (delta) => {
      const el = box.current;
      if (!el || scaled || el.scrollTop === 0) return;
      el.scrollTop += delta * rowH;
    };
  }, [model, rowH, scaled]);

  const positionOf = (i: number) => (scaled ? (i / Math.max(1, total - inView + 1)) * (height - viewH) : i * rowH);
  p.scrollRef.current = (i: number) => {
    const el = box.current;
    if (!el) return;
    const y = positionOf(i);
    if (scaled) el.scrollTop = y;
    else if (y < el.scrollTop) el.scrollTop = y;
    else if (y + rowH > el.scrollTop + el.clientHeight) el.scrollTop = y + rowH - el.clientHeight;
  };

  // A keyboard move focuses the cursor's row once it is rendered (it may need a fetch).
  const focusDone = useRef(0);
  useLayoutEffect(() => {
    if (!p.focusCursor || focusDone.current === p.focusCursor) return;
    const a = box.current?.querySelector<HTMLAnchorElement>(`[data-index="${p.cursor}"] a`);
    if (!a) return;
    a.focus({ preventScroll: true });
    focusDone.current = p.focusCursor;
  });

  const onScroll = () => {
    if (frame.current) return;
    frame.current = requestAnimationFrame(() => {
      frame.current = 0;
      if (box.current) setScrollTop(box.current.scrollTop);
    });
  };

  // Rows call the latest handlers through this, so a row whose data did not change is not
  // rendered again when the page is (opening a message, a keystroke, a live update).
  const latest = useRef(p);
  latest.current = p;
  const rows = [];
  for (let i = from; i <= to; i++) {
    const m = model.row(i);
    rows.push(
      m ? (
        <Row key={m.ID} m={m} i={i} total={total} p={latest} sel={p.isSelected(m.ID)} cur={i === p.cursor}
          isOpen={m.ID === p.open} query={p.query} />
      ) : (
        <div key={`ph${i}`} class="row ph" aria-hidden="true" data-index={i}>
          <span class="bar" />
        </div>
      ),
    );
  }

  return (
    <div class={`list-scroll ${wide ? "lw-wide" : viewW < TIGHT_PX ? "lw-narrow lw-tight" : "lw-narrow"}`} ref={box} onScroll={onScroll}
      style={{ "--row-h": `${rowH}px`, "--from-w": `${clampPx(0.105 * viewW, 77, 168)}px`, "--to-w": `${clampPx(0.085 * viewW, 70, 140)}px` }}>
      <div class="list-space" style={{ height: `${height}px` }}>
        <div class="list-rows" role="list" aria-label="Messages" style={{ transform: `translateY(${offsetY}px)` }}>
          {rows}
        </div>
      </div>
    </div>
  );
}

interface RowProps {
  m: Summary;
  i: number;
  total: number;
  p: { current: ListProps };
  sel: boolean;
  cur: boolean;
  isOpen: boolean;
  query: string;
}

class Row extends Component<RowProps> {
  shouldComponentUpdate(n: RowProps) {
    const o = this.props;
    return n.m !== o.m || n.i !== o.i || n.total !== o.total || n.sel !== o.sel || n.cur !== o.cur ||
      n.isOpen !== o.isOpen || n.query !== o.query;
  }
  render() {
    return <RowView {...this.props} />;
  }
}

function RowView({ m, i, total, p: ref, sel, cur, isOpen, query }: RowProps) {
  const p = {
    onToggle: (i: number, id: string, shift: boolean) => ref.current.onToggle(i, id, shift),
    onCursor: (i: number) => ref.current.onCursor(i),
    onOpen: (id: string, i: number) => ref.current.onOpen(id, i),
    onTag: (t: string) => ref.current.onTag(t),
    query,
  };
  const cls = `row${m.Read ? "" : " unread"}${sel ? " sel" : ""}${cur ? " cur" : ""}${isOpen ? " open" : ""}`;
  const subject = m.Subject || "(no subject)";
  const tags = m.Tags ?? [];
  const to = m.To?.[0];
  const moreTo = (m.Totals?.To ?? m.To?.length ?? 0) - (to ? 1 : 0);
  // The row is a grid; the link stretches over all of it (its ::after), so a click
  // anywhere opens the message, while the checkbox and the tag buttons sit above it.
  // Every cell has its own column of the row's grid, so the dates line up whether or not
  // a row has tags or attachments (an empty cell is not drawn at all).
  return (
    <div class={cls} role="listitem" aria-setsize={total} aria-posinset={i + 1} data-index={i} data-id={m.ID}>
      <input
        type="checkbox"
        class="check"
        tabIndex={cur ? 0 : -1}
        checked={sel}
        aria-label={`Select “${subject}”`}
        onClick={(e) => {
          e.preventDefault();
          p.onToggle(i, m.ID, e.shiftKey);
        }}
        onKeyDown={(e) => {
          if (e.key === " ") {
            e.preventDefault();
            p.onToggle(i, m.ID, e.shiftKey);
          }
        }}
      />
      <a
        class="link"
        href={href({ q: p.query, m: m.ID, view: "" })}
        tabIndex={cur ? 0 : -1}
        onFocus={() => p.onCursor(i)}
        onClick={(e) => {
          if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
          e.preventDefault();
          p.onOpen(m.ID, i);
        }}
      >
        <span class="dot" aria-hidden="true" />
        <span class="who">
          <span class="from" title={addr(m.From)}>
            {m.Read ? "" : <span class="vh">Unread. </span>}
            <bdi>{who(m.From) || "(no sender)"}</bdi>
          </span>
          <span class="to" title={(m.To ?? []).map(addr).join(", ")}>
            <span class="vh">to </span>
            {to ? <bdi>{who(to)}</bdi> : <span class="muted">(no recipient)</span>}
            {moreTo > 0 ? <span class="more-to"> +{moreTo}</span> : null}
          </span>
        </span>
        <span class="subj">
          <bdi class="s" dir="auto">{subject}</bdi>
          {m.Snippet ? <span class="snip"> — {m.Snippet}</span> : null}
        </span>
      </a>
      {tags.length ? (
      <span class="tags">
        {tags.slice(0, 3).map((t) => (
          <button
            type="button"
            class="tag"
            key={t}
            tabIndex={cur ? 0 : -1}
            aria-label={`Messages tagged ${t}`}
            onClick={() => p.onTag(t)}
          >
            {t}
          </button>
        ))}
      </span>
      ) : null}
      {m.Attachments > 0 ? (
        <span class="att" title={`${m.Attachments} attachment${m.Attachments > 1 ? "s" : ""}`}>
          <Paperclip />
          <span class="vh">has attachments</span>
        </span>
      ) : null}
      <span class="size">{size(m.Size)}</span>
      <time class="date" dateTime={m.Created} title={longDate(m.Created)}>
        {shortDate(m.Created)}
      </time>
    </div>
  );
}
