import { render } from "preact";
import { App } from "./app";
import { ListModel } from "./model";
import * as route from "./route";
import * as theme from "./theme";
import "./style.css";

theme.apply(theme.current());
const model = new ListModel();
model.setQuery(route.current().q); // the first list is asked for before the first render
// Tests and figures read the model's counters (list fetches) from here.
(window as unknown as { inlet: unknown }).inlet = { model };
render(<App model={model} />, document.getElementById("app")!);
