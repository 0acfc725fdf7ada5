// The message list of one view, held as a sparse window over the server's list.
//
// Design: rows live in a Map from position (0 = newest) to summary; the list component
// asks for the rows it shows (`want`), and the model fetches only what is missing, in one
// request per gap, so dragging the scrollbar to the end of 100,000 messages costs one
// fetch. Live events patch rows in place where the event says everything (read flag,
// tags); anything that moves positions (new, deleted, pruned) marks the window stale and
// one refresh — at most one per REFRESH_MS, however many events arrive — fetches the rows
// on screen again. So a burst of 10,000 messages costs about one list fetch a second.

import * as api from "./api";
import type { Summary } from "./api";

export const REFRESH_MS = 1000;
const KEEP_ROWS = 3000; // rows kept beyond the window before far ones are dropped
const MAX_LIMIT = 500; // the largest page the model asks for
// The first page of a view; the server preloads it with the page (page.cpp's Link header).
const FIRST_PAGE = 60;

export interface ModelEvent {
  type: "new" | "delete" | "update" | "prune";
  id: string;
  summary?: Summary;
}

export class ListModel {
  query = "";
  total = 0; // messages in this view
  unread = 0; // unread messages in this view
  storeUnread = 0; // unread messages in the store (or the mailbox viewed)
  tags: string[] = [];
  loaded = false; // the first page of this view has arrived
  error = "";
  fetches = 0; // list requests sent (for tests and figures)
  fetchTimes: number[] = []; // when the last 1000 of them were sent (performance.now())
  pendingNew = 0; // new messages since the last refresh (an estimate of the shift)

  private rows = new Map<number, Summary>();
  private index = new Map<string, number>(); // ID -> position, for patches
  private epoch = 0; // bumped when cached positions stop being valid
  private first = 0;
  private last = 30;
  private inflight = 0;
  private gapTimer = 0;
  private stale = false;
  private refreshing = false;
  private lastRefresh = 0;
  private refreshTimer = 0;
  private listeners = new Set<() => void>();
  private eventListeners = new Set<(e: ModelEvent) => void>();
  private anchor: { id: string; pos: number } | null = null;
  /** Called after a refresh moved the anchored row (the list keeps it in place). */
  onShift: (delta: number) => void = () => {};

  subscribe(f: () => void) {
    this.listeners.add(f);
    return () => this.listeners.delete(f);
  }
  onEvent(f: (e: ModelEvent) => void) {
    this.eventListeners.add(f);
    return () => this.eventListeners.delete(f);
  }
  // Listeners (the page's render) run at most every 30 ms however many events came, the
  // first change at once; a timer, not an animation frame, so a hidden tab still updates
  // its title and icon.
  private redraw = 0;
  private lastDraw = -1e9;
  private changed() {
    if (this.redraw) return;
    const wait = Math.max(0, this.lastDraw + 30 - performance.now());
    this.redraw = window.setTimeout(() => {
      this.redraw = 0;
      this.lastDraw = performance.now();
      for (const f of this.listeners) f();
    }, wait);
  }

  row(i: number): Summary | undefined {
    return this.rows.get(i);
  }
  position(id: string): number | undefined {
    return this.index.get(id);
  }

  private started = false;

  setQuery(q: string) {
    if (q === this.query && this.started) return;
    this.started = true;
    this.query = q;
    this.loaded = false;
    this.total = 0;
    this.error = "";
    this.clear();
    this.first = 0;
    this.last = 30;
    void this.fetch(0, FIRST_PAGE, this.epoch);
    this.changed();
  }

  /** Reloads the rows on screen now (a user action changed the list). */
  reload() {
    this.stale = true;
    this.lastRefresh = 0;
    this.scheduleRefresh();
  }

  private clear() {
    this.epoch++;
    this.rows.clear();
    this.index.clear();
  }

  /** The list shows rows first..last: fetch what is missing (debounced while scrolling). */
  want(first: number, last: number, anchorId?: string) {
    this.first = first;
    this.last = last;
    this.anchor = anchorId ? { id: anchorId, pos: first } : null;
    clearTimeout(this.gapTimer);
    this.gapTimer = window.setTimeout(() => this.fillGap(), 40);
  }

  private fillGap() {
    // A pending refresh fetches the rows on screen anyway (and positions are moving).
    if (!this.loaded || this.refreshing || this.stale) return;
    const over = Math.max(20, this.last - this.first);
    const lo = Math.max(0, this.first - over);
    const hi = Math.min(this.total - 1, this.last + over);
    let a = -1;
    let b = -1;
    for (let i = lo; i <= hi; i++) {
      if (!this.rows.has(i)) {
        if (a < 0) a = i;
        b = i;
      }
    }
    if (a < 0 || this.inflight > 1) return;
    void this.fetch(a, Math.min(MAX_LIMIT, b - a + 1), this.epoch);
  }

  private async fetch(start: number, limit: number, epoch: number, replace = false): Promise<boolean> {
    this.inflight++;
    this.fetches++;
    this.fetchTimes.push(performance.now());
    if (this.fetchTimes.length > 1000) this.fetchTimes.shift();
    try {
      const p = await api.list(this.query, start, limit);
      if (epoch !== this.epoch) return false;
      if (replace) this.clear();
      this.total = p.messages_count ?? p.total;
      this.unread = p.messages_unread ?? p.unread;
      this.storeUnread = p.unread;
      if (p.tags) this.tags = p.tags;
      const got = p.messages ?? [];
      got.forEach((m, k) => {
        const old = this.rows.get(p.start + k);
        if (old && this.index.get(old.ID) === p.start + k) this.index.delete(old.ID);
        this.rows.set(p.start + k, m);
        this.index.set(m.ID, p.start + k);
      });
      this.trim();
      this.loaded = true;
      this.error = "";
      return true;
    } catch (e) {
      if (epoch === this.epoch) this.error = e instanceof Error ? e.message : String(e);
      return false;
    } finally {
      this.inflight--;
      this.changed();
      if (epoch === this.epoch) window.setTimeout(() => this.fillGap(), 0);
    }
  }

  private trim() {
    if (this.rows.size <= KEEP_ROWS) return;
    const mid = (this.first + this.last) / 2;
    const far = [...this.rows.keys()].sort((x, y) => Math.abs(y - mid) - Math.abs(x - mid));
    for (const i of far.slice(0, this.rows.size - KEEP_ROWS / 2)) {
      const m = this.rows.get(i);
      if (m && this.index.get(m.ID) === i) this.index.delete(m.ID);
      this.rows.delete(i);
    }
  }

  private scheduleRefresh() {
    if (this.refreshTimer || this.refreshing) return;
    const wait = Math.max(0, this.lastRefresh + REFRESH_MS - performance.now());
    this.refreshTimer = window.setTimeout(() => {
      this.refreshTimer = 0;
      void this.refresh();
    }, wait);
  }

  private async refresh() {
    if (!this.stale) return;
    this.stale = false;
    this.refreshing = true;
    this.lastRefresh = performance.now();
    // Positions count from the newest: n new messages move what the user looks at down
    // by n. Fetch around where the anchored row should now be and keep it in place.
    const shift = this.first > 0 ? this.pendingNew : 0;
    this.pendingNew = 0;
    const anchor = this.first > 0 ? this.anchor : null;
    const over = Math.max(20, this.last - this.first);
    const start = Math.max(0, this.first + shift - over);
    const ok = await this.fetch(start, Math.min(MAX_LIMIT, this.last - this.first + 1 + 2 * over), this.epoch, true);
    this.refreshing = false;
    if (ok && anchor) {
      const now = this.index.get(anchor.id);
      if (now !== undefined && now !== anchor.pos) this.onShift(now - anchor.pos);
    }
    if (this.stale) this.scheduleRefresh();
    this.fillGap();
  }

  /** One of Mailpit's events from /api/events. */
  apply(type: string, data: unknown) {
    const d = (data ?? {}) as Record<string, unknown>;
    const id = typeof d.ID === "string" ? d.ID : "";
    switch (type) {
      case "new": {
        const s = d as unknown as Summary;
        this.pendingNew++;
        if (!this.query) this.total++;
        if (!s.Read) this.storeUnread++;
        this.stale = true;
        this.emit({ type: "new", id, summary: s });
        break;
      }
      case "delete": {
        const at = this.index.get(id);
        if (at !== undefined) {
          const m = this.rows.get(at);
          if (m && !m.Read) this.storeUnread = Math.max(0, this.storeUnread - 1);
        }
        this.stale = true;
        this.emit({ type: "delete", id });
        break;
      }
      case "update": {
        const at = this.index.get(id);
        const m = at === undefined ? undefined : this.rows.get(at);
        if (m && typeof d.Read === "boolean" && m.Read !== d.Read) {
          this.storeUnread = Math.max(0, this.storeUnread + (d.Read ? -1 : 1));
          this.unread = Math.max(0, this.unread + (d.Read ? -1 : 1));
          this.rows.set(at!, { ...m, Read: d.Read });
        }
        if (m && Array.isArray(d.Tags)) this.rows.set(at!, { ...this.rows.get(at!)!, Tags: d.Tags as string[] });
        // A search may select on what changed (is:unread, tag:): ask the server again.
        if (this.query) this.stale = true;
        this.emit({ type: "update", id });
        break;
      }
      default: // "prune": many messages changed at once
        this.stale = true;
        this.emit({ type: "prune", id: "" });
    }
    this.changed();
    if (this.stale) this.scheduleRefresh();
  }

  private emit(e: ModelEvent) {
    for (const f of this.eventListeners) f(e);
  }

  /** Applies a change the page made itself, before the server's event confirms it. */
  patch(ids: Iterable<string>, change: Partial<Summary>) {
    for (const id of ids) {
      const at = this.index.get(id);
      const m = at === undefined ? undefined : this.rows.get(at);
      if (!m) continue;
      if (change.Read !== undefined && change.Read !== m.Read) {
        this.storeUnread = Math.max(0, this.storeUnread + (change.Read ? -1 : 1));
        this.unread = Math.max(0, this.unread + (change.Read ? -1 : 1));
      }
      this.rows.set(at!, { ...m, ...change });
    }
    this.changed();
  }

  /** Summaries of the rows in [a, b] that are loaded (for shift-click ranges). */
  range(a: number, b: number): Summary[] {
    const out: Summary[] = [];
    for (let i = Math.min(a, b); i <= Math.max(a, b); i++) {
      const m = this.rows.get(i);
      if (m) out.push(m);
    }
    return out;
  }

  /** Fetches rows [a, b] if some are missing, so a range can be acted on. */
  async load(a: number, b: number): Promise<void> {
    const lo = Math.max(0, Math.min(a, b));
    const hi = Math.min(this.total - 1, Math.max(a, b));
    for (let s = lo; s <= hi; s += MAX_LIMIT) {
      let missing = false;
      for (let i = s; i <= Math.min(hi, s + MAX_LIMIT - 1); i++) if (!this.rows.has(i)) missing = true;
      if (missing) await this.fetch(s, Math.min(MAX_LIMIT, hi - s + 1), this.epoch);
    }
  }
}
