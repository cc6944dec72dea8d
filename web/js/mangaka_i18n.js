// Mangaka's nodes in the user's language on front ends that lose a pack's translations, and the
// grey hints of its text boxes on every front end. ComfyUI serves locales/<lang>/nodeDefs.json at
// /i18n, and newer front ends apply it themselves; the one ComfyUI 0.3.x ships (1.32) merges it
// before it lazily loads its own messages for that language, which then replace it, so the nodes
// stayed in English. Here the pack applies its own entries to each of its nodes as it is made (or
// as soon as they have arrived): the title, and the labels of inputs, widgets and outputs. Where
// the front end already translated them this sets the same words again. No front end (1.32 to
// 1.58) takes a text box's placeholder from a locale, only from the node's schema; the pack's
// entries carry it ("placeholder" beside "name"), and this puts it on the box.
import { app } from "../../../scripts/app.js";
import { api } from "../../../scripts/api.js";

let translations = null;
const arrived = api
  .fetchApi("/i18n")
  .then((answer) => answer.json())
  .then((all) => {
    translations = all || {};
  })
  .catch((error) => {
    translations = {};
    console.warn("mangaka: no translations", error);
  });

function translate(node, name, english) {
  const locale = app.ui?.settings?.getSettingValue?.("Comfy.Locale") || "en";
  const entry = translations?.[locale]?.nodeDefs?.[name];
  if (!entry) return;
  if (entry.display_name && (node.title === english || node.title === name)) node.title = entry.display_name;
  for (const slot of node.inputs || []) {
    const label = entry.inputs?.[slot.name]?.name;
    if (label) slot.label = label;
  }
  for (const widget of node.widgets || []) {
    const label = entry.inputs?.[widget.name]?.name;
    if (label) widget.label = label;
    // A box without a hint of its own shows its input's name, which the label then replaces.
    const box = widget.inputEl || (widget.element?.tagName === "TEXTAREA" ? widget.element : null);
    const hint = entry.inputs?.[widget.name]?.placeholder || (box?.placeholder === widget.name && label);
    if (hint) {
      if (widget.options) widget.options.placeholder = hint;
      if (box) box.placeholder = hint;
    }
  }
  (node.outputs || []).forEach((slot, i) => {
    const label = entry.outputs?.[String(i)]?.name;
    if (label) slot.label = label;
  });
  node.setDirtyCanvas?.(true, true);
}

app.registerExtension({
  name: "mangaka.i18n",
  beforeRegisterNodeDef(nodeType, nodeData) {
    if (!nodeData?.name?.startsWith("Mangaka")) return;
    const english = nodeData.display_name;
    const onNodeCreated = nodeType.prototype.onNodeCreated;
    nodeType.prototype.onNodeCreated = function () {
      const result = onNodeCreated?.apply(this, arguments);
      if (translations !== null) translate(this, nodeData.name, english);
      else arrived.then(() => translate(this, nodeData.name, english));
      return result;
    };
  },
});
