// A PNG of the message's HTML as the frame shows it, made in the browser: the frame's
// document is copied, its same-origin images (the message's parts) inlined as data: URLs
// and other images left out, the copy drawn as an SVG <foreignObject> onto a canvas. No
// library and no server round trip; nothing is fetched from another host.

const MAX_PX = 16000; // the canvas's height cap (browsers refuse much taller ones)

async function dataUrl(url: string): Promise<string> {
  const r = await fetch(url, { cache: "force-cache" });
  if (!r.ok) throw new Error(String(r.status));
  const blob = await r.blob();
  return await new Promise<string>((ok, fail) => {
    const fr = new FileReader();
    fr.onload = () => ok(String(fr.result));
    fr.onerror = () => fail(fr.error);
    fr.readAsDataURL(blob);
  });
}

const BLANK = "data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7";

/** Renders the frame's document to a PNG blob, `width` CSS pixels wide. */
export async function screenshot(frame: HTMLIFrameElement): Promise<Blob> {
  const doc = frame.contentDocument;
  if (!doc?.documentElement) throw new Error("the message is not shown");
  const width = Math.ceil(frame.getBoundingClientRect().width);
  const height = Math.min(MAX_PX, Math.ceil(doc.documentElement.scrollHeight));
  const copy = doc.documentElement.cloneNode(true) as HTMLElement;
  copy.querySelectorAll('meta[http-equiv="Content-Security-Policy" i]').forEach((e) => e.remove());
  const imgs = Array.from(copy.querySelectorAll("img"));
  await Promise.all(
    imgs.map(async (img) => {
      img.removeAttribute("srcset");
      const src = img.getAttribute("src") ?? "";
      let abs: URL | null = null;
      try {
        abs = new URL(src, frame.ownerDocument.baseURI);
      } catch {
        abs = null;
      }
      if (src.startsWith("data:")) return;
      if (abs && abs.origin === location.origin) {
        try {
          img.setAttribute("src", await dataUrl(abs.href));
          return;
        } catch {
          // fall through: left out
        }
      }
      img.setAttribute("src", BLANK);
    }),
  );
  // CSS url()s point elsewhere: a foreignObject image may load nothing, so drop them.
  copy.querySelectorAll<HTMLElement>("[style*='url(' i]").forEach((e) => {
    e.style.backgroundImage = "none";
  });
  copy.querySelectorAll("[background]").forEach((e) => e.removeAttribute("background"));
  const xhtml = new XMLSerializer().serializeToString(copy);
  const svg =
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">` +
    `<foreignObject x="0" y="0" width="100%" height="100%">${xhtml}</foreignObject></svg>`;
  const image = new Image();
  image.width = width;
  image.height = height;
  await new Promise<void>((ok, fail) => {
    image.onload = () => ok();
    image.onerror = () => fail(new Error("the HTML could not be drawn"));
    image.src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(svg);
  });
  const scale = Math.min(2, window.devicePixelRatio || 1);
  const canvas = document.createElement("canvas");
  canvas.width = Math.round(width * scale);
  canvas.height = Math.round(height * scale);
  const g = canvas.getContext("2d")!;
  g.fillStyle = "#ffffff"; // the frame's background
  g.fillRect(0, 0, canvas.width, canvas.height);
  g.scale(scale, scale);
  g.drawImage(image, 0, 0, width, height);
  return await new Promise<Blob>((ok, fail) =>
    canvas.toBlob((b) => (b ? ok(b) : fail(new Error("the PNG could not be made"))), "image/png"),
  );
}

/** Saves a blob under a file name (a download). */
export function save(blob: Blob, name: string) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
