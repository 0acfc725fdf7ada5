// Light and dark: the system's choice unless the user picked one (kept in localStorage).
export type Theme = "system" | "light" | "dark";

export function current(): Theme {
  const t = localStorage.getItem("inlet.theme");
  return t === "light" || t === "dark" ? t : "system";
}

export function apply(t: Theme) {
  if (t === "system") {
    delete document.documentElement.dataset.theme;
    localStorage.removeItem("inlet.theme");
  } else {
    document.documentElement.dataset.theme = t;
    localStorage.setItem("inlet.theme", t);
  }
}

export function next(t: Theme): Theme {
  return t === "system" ? "light" : t === "light" ? "dark" : "system";
}
