// The page's static checks, run by ctest (web_check): the TypeScript type check, and the
// rules that keep untrusted strings out of markup — no source may write HTML into the
// page (innerHTML, outerHTML assignment, insertAdjacentHTML, document.write,
// dangerouslySetInnerHTML) or turn strings into code (eval, new Function, string timers).
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
let failed = 0;

const tsc = join(here, "node_modules", "typescript", "bin", "tsc");
const r = spawnSync(process.execPath, [tsc, "--noEmit", "-p", here], { stdio: "inherit" });
if (r.status !== 0) {
  console.error("web_check: type check failed");
  failed++;
}

const rules = [
  [/\.innerHTML\b/, "innerHTML"],
  [/\.outerHTML\s*=[^=]/, "outerHTML assignment"],
  [/insertAdjacentHTML/, "insertAdjacentHTML"],
  [/document\.write/, "document.write"],
  [/dangerouslySetInnerHTML/, "dangerouslySetInnerHTML"],
  [/\beval\s*\(/, "eval"],
  [/new\s+Function\b/, "new Function"],
  [/set(Timeout|Interval)\(\s*["'`]/, "string timer"],
  [/createContextualFragment/, "createContextualFragment"],
];
const src = join(here, "src");
for (const f of readdirSync(src)) {
  if (!/\.(ts|tsx)$/.test(f)) continue;
  readFileSync(join(src, f), "utf8")
    .split("\n")
    .forEach((line, i) => {
      for (const [re, what] of rules)
        if (re.test(line)) {
          console.error(`${f}:${i + 1}: ${what} is not allowed: ${line.trim()}`);
          failed++;
        }
    });
}
console.log(failed ? `web_check: ${failed} problem(s)` : "web_check: ok");
process.exit(failed ? 1 : 0);
