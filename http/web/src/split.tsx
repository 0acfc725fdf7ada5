// The handle between the list and the open message: drag it (or focus it and press the
// arrow keys) to widen or narrow the list. The width is kept in localStorage.
import { useRef } from "preact/hooks";

const KEY = "inlet.listWidth";
export const MIN_LIST = 260;

export function savedWidth(): number {
  const n = Number(localStorage.getItem(KEY));
  return Number.isFinite(n) && n >= MIN_LIST ? n : 0;
}

/** The list's width for a window this wide: the saved one when there is room for it. */
export function listWidth(saved: number, windowW: number): number {
  const max = Math.max(MIN_LIST, windowW - 360);
  const w = saved || Math.min(560, Math.max(320, Math.round(windowW * 0.36)));
  return Math.min(max, Math.max(MIN_LIST, w));
}

export function Splitter(p: { width: number; windowW: number; onWidth: (w: number) => void }) {
  const start = useRef<{ x: number; w: number } | null>(null);
  const set = (w: number) => {
    const v = listWidth(Math.round(w), p.windowW);
    localStorage.setItem(KEY, String(v));
    p.onWidth(v);
  };
  return (
    <div
      class="splitter"
      role="separator"
      aria-orientation="vertical"
      aria-label="Resize the message list"
      aria-valuemin={MIN_LIST}
      aria-valuemax={Math.max(MIN_LIST, p.windowW - 360)}
      aria-valuenow={p.width}
      tabIndex={0}
      onPointerDown={(e) => {
        (e.currentTarget as HTMLElement).setPointerCapture(e.pointerId);
        start.current = { x: e.clientX, w: p.width };
        e.preventDefault();
      }}
      onPointerMove={(e) => {
        if (start.current) set(start.current.w + e.clientX - start.current.x);
      }}
      onPointerUp={() => (start.current = null)}
      onPointerCancel={() => (start.current = null)}
      onKeyDown={(e) => {
        const step = e.shiftKey ? 120 : 24;
        if (e.key === "ArrowLeft") set(p.width - step);
        else if (e.key === "ArrowRight") set(p.width + step);
        else if (e.key === "Home") set(MIN_LIST);
        else if (e.key === "End") set(p.windowW);
        else return;
        e.preventDefault();
        e.stopPropagation();
      }}
    />
  );
}
