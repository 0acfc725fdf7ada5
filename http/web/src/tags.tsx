// Tags of one message: shown as chips; added and removed when the API has PUT api/v1/tags.
import { useState } from "preact/hooks";

export function TagEditor(p: {
  tags: string[];
  known: string[];
  editable: boolean;
  onChange: (t: string[]) => void;
  onPick: (t: string) => void; // shows the messages with this tag
}) {
  const [text, setText] = useState("");
  const add = () => {
    const t = text.trim();
    setText("");
    if (t && !p.tags.includes(t)) p.onChange([...p.tags, t]);
  };
  return (
    <div class="tag-edit">
      {p.tags.length === 0 && !p.editable ? <span class="muted">none</span> : null}
      {p.tags.map((t) => (
        <span class="tag" key={t}>
          <button type="button" class="tag-go" aria-label={`Messages tagged ${t}`} onClick={() => p.onPick(t)}>
            {t}
          </button>
          {p.editable ? (
            <button type="button" class="tag-x" aria-label={`Remove tag ${t}`} onClick={() => p.onChange(p.tags.filter((x) => x !== t))}>
              ×
            </button>
          ) : null}
        </span>
      ))}
      {p.editable ? (
        <form
          class="tag-add"
          onSubmit={(e) => {
            e.preventDefault();
            add();
          }}
        >
          <input
            type="text"
            value={text}
            list="known-tags"
            placeholder="Add tag"
            aria-label="Add a tag"
            onInput={(e) => setText((e.currentTarget as HTMLInputElement).value)}
          />
          <datalist id="known-tags">
            {p.known.map((t) => (
              <option key={t} value={t} />
            ))}
          </datalist>
        </form>
      ) : null}
    </div>
  );
}
