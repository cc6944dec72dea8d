// Mangaka's front-end extension: the names of the files a Save node wrote, shown on the node.
// ComfyUI shows a node's saved images by itself, but not the text a node returns (ui.text), so a
// Save Manga node would stay blank after its run; this adds a read-only "saved" box that lists
// them. It is not part of the workflow: never saved with it, never sent with a prompt.
import { app } from "../../../scripts/app.js";
import { ComfyWidgets } from "../../../scripts/widgets.js";

const SHOWS_WHAT_IT_SAVED = new Set(["MangakaSaveManga", "MangakaSaveSeriesBible", "MangakaSaveScreenplay"]);

function savedBox(node) {
  let widget = node.widgets?.find((w) => w.name === "saved");
  if (!widget) {
    widget = ComfyWidgets.STRING(node, "saved", ["STRING", { multiline: true }], app).widget;
    widget.serialize = false;
    widget.options = { ...(widget.options || {}), serialize: false };
    if (widget.inputEl) {
      widget.inputEl.readOnly = true;
      widget.inputEl.dataset.mangakaSaved = String(node.id);
    }
    const wanted = node.computeSize?.();
    if (wanted && node.size[1] < wanted[1]) node.setSize([node.size[0], wanted[1]]);
  }
  return widget;
}

app.registerExtension({
  name: "mangaka.saved-files",
  async beforeRegisterNodeDef(nodeType, nodeData) {
    if (!SHOWS_WHAT_IT_SAVED.has(nodeData?.name)) return;
    const onExecuted = nodeType.prototype.onExecuted;
    nodeType.prototype.onExecuted = function (message) {
      onExecuted?.apply(this, arguments);
      if (Array.isArray(message?.text) && message.text.length) {
        savedBox(this).value = message.text.join("\n");
        this.setDirtyCanvas?.(true, true);
      }
    };
  },
});
