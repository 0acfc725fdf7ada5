// Text for dates, sizes and addresses. Everything returned here is inserted as text.
import type { Address } from "./api";

export function addr(a: Address | null | undefined): string {
  if (!a) return "";
  return a.Name ? `${a.Name} <${a.Address}>` : a.Address || "";
}

export function addrs(l: Address[] | null | undefined): string {
  return (l ?? []).map(addr).join(", ");
}

/** The name when there is one, else the address: what the list shows. */
export function who(a: Address | null | undefined): string {
  if (!a) return "";
  return a.Name || a.Address || "";
}

export function size(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1048576) return `${(n / 1024).toFixed(n < 10240 ? 1 : 0)} kB`;
  return `${(n / 1048576).toFixed(1)} MB`;
}

const day = 86400000;

// Formatters made once: toLocale*String with options builds a new Intl.DateTimeFormat on
// every call, which was the costliest part of drawing a screen of rows.
const fmt = (o: Intl.DateTimeFormatOptions) => {
  let f: Intl.DateTimeFormat | undefined;
  return (d: Date) => (f ??= new Intl.DateTimeFormat(undefined, o)).format(d);
};
const hourMinute = fmt({ hour: "2-digit", minute: "2-digit" });
const weekday = fmt({ weekday: "short" });
const monthDay = fmt({ month: "short", day: "numeric" });
const yearMonthDay = fmt({ year: "numeric", month: "short", day: "numeric" });
const medium = fmt({ dateStyle: "medium", timeStyle: "medium" });

/** Short date for the list: time today, weekday this week, day and month this year. */
export function shortDate(iso: string, now = new Date()): string {
  const d = new Date(iso);
  if (isNaN(d.getTime())) return "";
  const diff = now.getTime() - d.getTime();
  if (diff < 60000 && diff > -60000) return "now";
  if (diff < 3600000 && diff > 0) return `${Math.floor(diff / 60000)} min`;
  if (d.toDateString() === now.toDateString()) return hourMinute(d);
  if (diff < 6 * day && diff > 0) return weekday(d);
  if (d.getFullYear() === now.getFullYear()) return monthDay(d);
  return yearMonthDay(d);
}

export function longDate(iso: string | null | undefined): string {
  if (!iso) return "";
  const d = new Date(iso);
  return isNaN(d.getTime()) ? String(iso) : medium(d);
}
